"""The front door: `awp --help`, `awp plan` at 80 columns, and `awp packet new` with hints to paste."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from awp_pipelines.cli import cli
from awp_pipelines.cli.common import summary
from awp_pipelines.cli_features.authoring import PACKETS_DIR
from awp_pipelines.orchestration.definitions import REPO_PACKETS_DIR


def awp(*args: str | Path) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def _groups(group: object = cli) -> list[tuple[str, object]]:
    """Every group of the CLI with its path: awp, awp packet, awp prompt, …"""
    import click

    assert isinstance(group, click.Group)
    found: list[tuple[str, object]] = [("", group)]
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            found += [(f"{name} {path}".strip(), g) for path, g in _groups(command)]
    return found


@pytest.mark.parametrize("columns", ["80", "60"])
def test_help_lists_every_command_with_its_whole_summary(monkeypatch: pytest.MonkeyPatch, columns: str) -> None:
    import click

    monkeypatch.setenv("COLUMNS", columns)
    for path, group in _groups():
        assert isinstance(group, click.Group)
        result = awp(*path.split(), "--help")
        assert result.exit_code == 0, result.output
        listing = result.output.split("Commands:", 1)[1]
        assert "..." not in listing
        listing = " ".join(listing.split())
        for name, command in group.commands.items():
            assert f"{name} {summary(command)}" in listing, (path, name)
            assert summary(command).endswith("."), (path, name)


def test_plan_reads_at_80_columns_without_cutting_words(prompt_runner_root: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(prompt_runner_root / "simulated_recovery_packet", tmp_path / "recovery")
    monkeypatch.chdir(tmp_path)  # paths print relative to here, and no ./resources/providers.yaml
    monkeypatch.setenv("COLUMNS", "80")
    printed = awp("plan", "recovery")
    assert printed.exit_code == 0, printed.output
    assert max(len(line) for line in printed.output.splitlines()) <= 80
    words = set(printed.output.split())
    for prompt in json.loads(awp("plan", "recovery", "--json").output)["prompts"]:
        texts = [prompt["name"], prompt["commit_message"], *(item["label"] for item in prompt["verify_items"])]
        for text in texts:
            assert set(text.split()) <= words, f"{text!r} is cut at 80 columns"


def test_packet_new_with_a_bare_name_at_a_project_root_goes_under_assets(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "assets").mkdir()
    monkeypatch.chdir(tmp_path)
    result = awp("packet", "new", "my-packet")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "assets" / "my-packet" / "packet.yaml").is_file()
    assert not (tmp_path / "my-packet").exists()
    assert "prompt new assets/my-packet SLUG" in result.output
    # A path, not a bare name, is taken as given.
    assert awp("packet", "new", "./elsewhere").exit_code == 0
    assert (tmp_path / "elsewhere" / "packet.yaml").is_file()


def test_packet_new_outside_a_project_root_writes_in_the_current_folder(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert awp("packet", "new", "loose").exit_code == 0
    assert (tmp_path / "loose" / "packet.yaml").is_file()


def test_hints_name_the_awp_on_path_else_this_installs_script(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    script = Path(sys.executable).parent / "awp"
    assert script.exists(), "the tests run from the installed venv"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    absent = awp("packet", "new", "one")
    assert f"next: {script} prompt new one SLUG" in absent.output
    monkeypatch.setenv("PATH", f"{script.parent}:/usr/bin:/bin")
    present = awp("prompt", "new", "one", "first")
    assert present.exit_code == 0, present.output
    assert "then run: awp checklist sync one" in present.output


def test_packets_dir_is_the_folder_the_code_location_discovers() -> None:
    assert PACKETS_DIR == REPO_PACKETS_DIR
