"""The agent's install grants, on real files: the program and its real install, never the folder around it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from awp_pipelines.core.providers.sandboxing import install_grants


def _paths(words: list[str], path_env: str | None = None) -> set[str]:
    return {g.path for g in install_grants(words, path_env)}


def test_a_script_at_a_packet_root_or_in_home_is_granted_alone_not_its_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    packet = tmp_path / "packet"
    (packet / ".awp").mkdir(parents=True)
    agent = packet / "agent.sh"
    agent.write_text("#!/bin/sh\necho hi\n")
    agent.chmod(0o755)
    assert _paths([str(agent)]) == {str(agent)}
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    script = home / "agent.sh"
    script.write_text("echo hi\n")
    assert _paths(["/bin/sh", str(script)]) == {str(script)}  # `/bin/sh ~/agent.sh`: the script, not HOME
    (packet / ".awp").rmdir()  # a plain folder of programs is the script's install (it may import neighbours)
    assert _paths([str(agent)]) == {str(packet)}


def test_a_link_grants_the_path_written_and_the_real_file(tmp_path: Path) -> None:
    real = tmp_path / "opt" / "agent"
    real.parent.mkdir()
    (real.parent / "packet.yaml").write_text("")  # so each path is its file alone
    real.write_text("#!/bin/sh\n")
    real.chmod(0o755)
    link = tmp_path / "bin" / "agent"
    link.parent.mkdir()
    (link.parent / ".awp").mkdir()
    link.symlink_to(real)
    assert _paths([str(link)]) == {str(link), str(real)}


def test_an_npm_install_is_its_node_modules_and_a_venv_its_prefix(tmp_path: Path) -> None:
    cli = tmp_path / "npm" / "node_modules" / "pkg" / "bin" / "cli.js"
    cli.parent.mkdir(parents=True)
    cli.write_text("#!/usr/bin/env node\n")
    cli.chmod(0o755)
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    python = venv / "bin" / "python"
    python.write_text("")
    script = tmp_path / "home" / "agent.py"
    script.parent.mkdir()
    (script.parent / "packet.yaml").write_text("")
    script.write_text(f"#!{python}\n")
    script.chmod(0o755)
    assert _paths([str(cli)]) == {str(tmp_path / "npm" / "node_modules")}
    # The script, and the interpreter its first line names, as its venv.
    assert _paths([str(script)]) == {str(script), str(venv)}


def test_the_executable_is_found_on_path_and_folders_and_relative_words_grant_nothing(tmp_path: Path) -> None:
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "prompts").mkdir()
    agent = tools / "my-agent"
    agent.write_text("#!/bin/sh\n")
    agent.chmod(0o755)
    assert _paths(["my-agent", str(tmp_path), "~/agent.sh", "--flag"], path_env=str(tools)) == {str(agent)}
    # The runner's own interpreter: its real install, if outside the system folders.
    real = os.path.realpath(sys.executable)
    assert all(not p.startswith("/usr/") for p in _paths([real]))
