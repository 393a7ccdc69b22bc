"""A broken reference between a packet's parts is one line at `awp lint`, `awp plan` and `awp run` alike: lint's
finding, refused by the plan and the run with the same file, line and key (refuse_broken_references), or said as a
warning where the run can go on (a template only `awp prompt new` reads)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from awp_pipelines import api
from awp_pipelines.cli import cli
from awp_pipelines.core.lint import lint_loaded, refuse_broken_references
from awp_pipelines.core.lint.references import REFUSED
from awp_pipelines.core.packet.errors import PacketError
from awp_pipelines.core.packet.packet import load_packet
from awp_pipelines.core.packet.providers_config import BUILTIN
from awp_pipelines.core.planning.plan import PlanContext, build_plan

VERIFY = {"files_exist": ["a.txt"], "commands": [{"exec": "true", "stdout_contains": "x", "timeout_ms": 1000}]}

# kind → (manifest keys, {prompt stem: front matter}, the key the refusal names)
BROKEN: dict[str, tuple[dict[str, Any], dict[str, dict[str, Any]], str]] = {
    "unknown_depends_on": ({}, {"01_a": {}, "02_b": {"depends_on": ["01", "07"]}}, "depends_on"),
    "dependency_cycle": ({}, {"01_a": {"depends_on": "02"}, "02_b": {"depends_on": "01"}}, "depends_on"),
    "duplicate_prompt_id": ({}, {"01_a": {}, "02_b": {"id": "01"}}, "id"),
    "unknown_target_repo": ({}, {"01_a": {"targets": ["app", "web"]}}, "targets.1"),
    "unknown_verify_repo": ({}, {"01_a": {"verify": {**VERIFY, "files_absent": [{"repo": "web", "path": "x"}]}}},
                            "verify.files_absent.0"),
    "unknown_phase": ({"phases": {"1": "Build"}}, {"01_a": {"phase": 2}}, "phase"),
}


def write(root: Path, manifest: dict[str, Any], prompts: dict[str, dict[str, Any]]) -> Path:
    (root / "app" / ".git").mkdir(parents=True)
    (root / "prompts").mkdir()
    base = {"name": "refs", "provider": "simulated", "repos": {"app": {"path": "./app", "default": True}}}
    (root / "packet.yaml").write_text(yaml.safe_dump({**base, **manifest}, sort_keys=False))
    for stem, front in prompts.items():
        keys = {"verify": VERIFY, **front}
        (root / "prompts" / f"{stem}.prompt.md").write_text(f"---\n{yaml.safe_dump(keys, sort_keys=False)}---\nx\n")
    return root


def refuse(root: Path) -> list[str]:
    packet = load_packet(root)
    return refuse_broken_references(lint_loaded(packet, BUILTIN, build_plan(packet, PlanContext(catalog=BUILTIN))))


def test_every_refused_kind_has_a_packet_here() -> None:
    assert set(BROKEN) == REFUSED


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_a_broken_reference_is_refused_where_lint_reports_it(tmp_path: Path, kind: str) -> None:
    manifest, prompts, key = BROKEN[kind]
    root = write(tmp_path, manifest, prompts)
    packet = load_packet(root)
    report = lint_loaded(packet, BUILTIN, build_plan(packet, PlanContext(catalog=BUILTIN)))
    [found] = [f for f in report.findings if f.kind == kind]
    with pytest.raises(PacketError) as refused:
        refuse(root)
    err = refused.value
    assert (str(err.file), err.line, err.key, err.message) == (found.file, found.line, key, found.message)
    assert err.line is not None and "`awp lint` lists every finding" in (err.hint or "")


def test_a_missing_template_is_said_not_refused(tmp_path: Path) -> None:
    root = write(tmp_path, {"prompt_template": "from-adr"}, {"01_a": {}})
    [said] = refuse(root)
    assert said.startswith(f"{root / 'packet.yaml'}:") and "template 'from-adr' not found" in said
    assert api.plan(root).warnings[-1] == said  # the plan says it too (the run: as `awp run: warning:`)


def awp(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args))


@pytest.mark.parametrize("command", [("plan",), ("run",), ("run", "--dry-run")])
@pytest.mark.parametrize("kind", ["unknown_depends_on", "dependency_cycle"])
def test_plan_and_run_say_what_lint_says_in_one_line(tmp_path: Path, command: tuple[str, ...], kind: str) -> None:
    """These two ended in a KeyError (run) and a CircularDependencyError (the job) after a silent plan."""
    manifest, prompts, _ = BROKEN[kind]
    root = write(tmp_path, manifest, prompts)
    result = awp(*command, str(root))
    assert result.exit_code == 2 and not isinstance(result.exception, KeyError), result.output
    [line] = result.output.splitlines()
    assert line.startswith(f"error: {root / 'prompts'}/") and ": depends_on: " in line
    assert not (root / ".awp" / "dagster").exists()  # refused before any instance opened
