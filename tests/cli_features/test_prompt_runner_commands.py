"""Prompt Runner's `capabilities`, `template list` and `repo add`, as AWP has them (each with --json): repo add
rewrites only the manifest's repos: block, in the form it was written in, and moves the default as Prompt Runner
does; template list gives the built-in, home and packet templates, a later one of a name replacing an earlier;
every capability named is backed by the code that provides it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from awp_pipelines.cli import cli
from awp_pipelines.cli.run_cmd import run_command
from awp_pipelines.cli_features.capabilities import AWP, PROMPT_RUNNER, SCHEMA
from awp_pipelines.core.packet.home_profile import templates_dir
from awp_pipelines.core.packet.install import VERSION
from awp_pipelines.core.packet.packet import load_packet
from awp_pipelines.core.providers.registry import CLI_ADAPTERS
from awp_pipelines.core.records.failures import FAILURE_CLASSES

NATIVE = """\
# The team's packet: keep this comment.
name: refs
provider: simulated
repos:
  app:
    path: ./app   # the service
    default: true
# phases come next
phases:
  "1": Build
"""
PROMPT_RUNNER_MANIFEST = """\
---
name: pr-refs
repos:
  - name: app
    path: ./app
    default: true
prompt_dir: prompts
---
# pr-refs

What this packet does.
"""


def awp(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args))


def test_repo_add_keeps_every_other_line_and_the_default(tmp_path: Path) -> None:
    (tmp_path / "packet.yaml").write_text(NATIVE)
    added = awp("repo", "add", "web", "../web", "--packet", str(tmp_path), "--json")
    assert added.exit_code == 0, added.output
    said = json.loads(added.stdout)
    assert said["repo"] == {"name": "web", "path": "../web", "default": False}
    assert "no such work tree" in said["warning"]
    text = (tmp_path / "packet.yaml").read_text()
    assert text.startswith("# The team's packet: keep this comment.\nname: refs\n")
    assert text.endswith("# phases come next\nphases:\n  \"1\": Build\n")
    packet = load_packet(tmp_path)
    assert {n: (r.path, r.default) for n, r in packet.repos.items()} == {
        "app": ((tmp_path / "app").resolve(), True), "web": ((tmp_path / "../web").resolve(), False)}
    moved = awp("repo", "add", "api", "./api", "--packet", str(tmp_path), "--default")
    assert moved.exit_code == 0 and "(./api, default)" in moved.stdout
    assert [n for n, r in load_packet(tmp_path).repos.items() if r.default] == ["api"]


def test_repo_add_to_a_prompt_runner_manifest_keeps_its_list_form_and_body(tmp_path: Path) -> None:
    (tmp_path / "prompt_runner_packet.md").write_text(PROMPT_RUNNER_MANIFEST)
    (tmp_path / "prompts").mkdir()
    assert awp("repo", "add", "web", "./web", "--packet", str(tmp_path)).exit_code == 0
    packet = load_packet(tmp_path)
    assert isinstance(packet.manifest.repos, list) and [r.name for r in packet.manifest.repos] == ["app", "web"]
    assert packet.body == "# pr-refs\n\nWhat this packet does.\n" and packet.manifest.prompt_dir == "prompts"


def test_the_first_repo_is_the_default_and_a_name_declared_twice_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "packet.yaml").write_text("name: bare\nprovider: simulated\n")
    assert awp("repo", "add", "app", "./app", "--packet", str(tmp_path)).exit_code == 0
    assert load_packet(tmp_path).repos["app"].default
    before = (tmp_path / "packet.yaml").read_text()
    again = awp("repo", "add", "app", "./other", "--packet", str(tmp_path))
    assert again.exit_code == 2 and again.output.count("\n") == 1 and "repo 'app' is declared already" in again.output
    assert (tmp_path / "packet.yaml").read_text() == before


def test_template_list_gives_builtin_home_and_packet_templates(tmp_path: Path) -> None:
    (tmp_path / "packet.yaml").write_text("name: t\n")
    templates_dir().mkdir(parents=True)
    for folder, name in ((templates_dir(), "from-adr"), (templates_dir(), "default"), (tmp_path / "templates",
                                                                                       "from-adr")):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{name}.prompt.md").write_text(f"# {name}\n")
    listed = json.loads(awp("template", "list", str(tmp_path), "--json").stdout)
    assert [(e["name"], e["source"]) for e in listed] == [("default", "home"), ("from-adr", "packet")]
    assert listed[1]["path"] == str(tmp_path / "templates" / "from-adr.prompt.md")
    text = awp("template", "list").stdout.splitlines()
    assert [line.split("\t")[:2] for line in text] == [["default", "home"], ["from-adr", "home"]]


def test_without_templates_anywhere_the_builtin_one_is_listed() -> None:
    assert awp("template", "list").stdout == "default\tbuiltin\tbuiltin\n"


def test_capabilities_lists_each_name_once_and_json_has_schema_and_version() -> None:
    names = awp("capabilities").stdout.splitlines()
    assert names == [*PROMPT_RUNNER, *AWP] and len(set(names)) == len(names)
    document = json.loads(awp("capabilities", "--json").stdout)
    assert (document["schema"], document["version"], document["capabilities"]) == (SCHEMA, VERSION, names)


def test_every_capability_is_backed_by_what_provides_it() -> None:
    options = {opt for param in run_command.params for opt in getattr(param, "opts", [])}
    backed = {
        "selector.remaining": "--remaining" in options, "selector.lower_bound": "--from" in options,
        "selector.upper_bound": "--through" in options,
        "selector.explicit_many": any(p.name == "ids" and p.nargs == -1 for p in run_command.params),
        "verifier.typed_faults": {"verifier_fault", "verifier_timeout"} <= set(FAILURE_CLASSES),
        "cli.strict_options": awp("run", ".", "--no-such-option").exit_code == 2,
    }
    assert all(backed.values()), backed
    providers = {name.removeprefix("provider.") for name in AWP if name.startswith("provider.")}
    assert providers == set(CLI_ADAPTERS) - {"command"}
    assert "provider.amp" in AWP


@pytest.mark.parametrize("command", [("capabilities",), ("template", "list"), ("repo", "add")])
def test_each_is_in_the_help(command: tuple[str, ...]) -> None:
    assert awp(*command, "--help").exit_code == 0
