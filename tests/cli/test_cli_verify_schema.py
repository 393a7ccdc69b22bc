"""`awp verify` (contracts only, no provider), `awp schema` and the automation config of the code location."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from dagster import Definitions
from repo_paths import REPO_ROOT

from awp_pipelines.cli import cli
from awp_pipelines.core.packet.errors import PacketError
from awp_pipelines.orchestration.definitions import build_definitions


def _awp(*args: object):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.fixture
def single_repo(prompt_runner_root: Path, tmp_path: Path, make_git_repo) -> Path:  # type: ignore[no-untyped-def]
    packet = tmp_path / "single"
    shutil.copytree(prompt_runner_root / "single_repo_packet", packet)
    make_git_repo(packet / "workspace")
    return packet


def test_verify_fails_an_unmet_contract_and_passes_once_the_work_is_there(single_repo: Path) -> None:
    before = _awp("verify", single_repo, "01", "--json")
    assert before.exit_code == 1
    [report] = json.loads(before.stdout)
    assert report["prompt_id"] == "01" and not report["passed"]
    (single_repo / "workspace" / "hello.txt").write_text("Hello from Prompt Runner\n")
    after = _awp("verify", single_repo, "01")
    assert after.exit_code == 0, after.output
    assert "01: pass" in after.output


def test_verify_exits_3_on_a_verifier_fault(tmp_path: Path, make_git_repo) -> None:  # type: ignore[no-untyped-def]
    make_git_repo(tmp_path / "p" / "repo")
    (tmp_path / "p" / "packet.yaml").write_text("name: p\nrepos:\n  app: {path: repo, default: true}\n")
    (tmp_path / "p" / "prompts").mkdir()
    (tmp_path / "p" / "prompts" / "01_x.prompt.md").write_text(
        "---\nverify:\n  commands:\n    - {exec: no-such-tool-anywhere, timeout_ms: 1000}\n---\nx\n")
    result = _awp("verify", tmp_path / "p")
    assert result.exit_code == 3
    assert "verifier_fault" in result.output


@pytest.mark.parametrize("model", ["manifest", "prompt", "providers", "profile"])
def test_schema_prints_the_json_schema_of_each_on_disk_model(model: str) -> None:
    result = _awp("schema", model)
    assert result.exit_code == 0
    schema = json.loads(result.stdout)
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    assert all("description" in field or "$ref" in field or "anyOf" in field
               for field in schema["properties"].values())


def _project_with_automation(tmp_path: Path, text: str) -> Path:
    project = tmp_path / "project"
    shutil.copytree(REPO_ROOT / "assets" / "demo", project / "assets" / "demo",
                    ignore=shutil.ignore_patterns("workspace", ".awp"))
    (project / "sensors").mkdir()
    (project / "sensors" / "automation.yaml").write_text(text)
    return project


def test_automation_config_schedules_a_packet_job(tmp_path: Path) -> None:
    project = _project_with_automation(tmp_path, "schedules:\n  - {packet: demo, cron: '0 6 * * 1-5'}\n")
    defs: Definitions = build_definitions(project)
    schedule = defs.resolve_schedule_def("demo_schedule")
    assert schedule.cron_schedule == "0 6 * * 1-5" and schedule.job_name == "packet__demo"


def test_automation_config_naming_an_unknown_packet_is_an_error(tmp_path: Path) -> None:
    project = _project_with_automation(tmp_path, "schedules:\n  - {packet: nowhere, cron: '0 6 * * *'}\n")
    with pytest.raises(PacketError, match="unknown packet 'nowhere'"):
        build_definitions(project)
