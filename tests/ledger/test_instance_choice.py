"""`awp status` and `awp watch` follow DAGSTER_HOME as the `dagster` CLI does (a deployment's hosts set it, and
the runs are there, not in the packet's embedded instance), and say on their first line which instance they
read. Before, status read the embedded instance silently and found nothing."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from dagster import DagsterRunStatus
from dagster._core.test_utils import create_run_for_test
from repo_paths import REPO_ROOT

from awp_pipelines.cli import cli
from awp_pipelines.orchestration.ledger.factory import ledger_of
from awp_pipelines.orchestration.ledger.instance import open_instance_folder

DEMO = REPO_ROOT / "assets" / "demo"


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    target = tmp_path / "demo"
    shutil.copytree(DEMO, target, ignore=shutil.ignore_patterns("workspace", ".awp"))
    return target


def _deployment_home(folder: Path) -> Path:
    """An instance with a dagster.yaml, as a deployment's DAGSTER_HOME holds, and one run of the demo in it."""
    instance = open_instance_folder(folder)
    try:
        create_run_for_test(instance, job_name="packet__demo", status=DagsterRunStatus.SUCCESS,
                            tags={"awp/packet_run": "pr-deployed"})
        ledger_of(instance).note_packet_run("demo", "pr-deployed", int(time.time() * 1000))
    finally:
        instance.dispose()
    return folder


@pytest.mark.parametrize("command", [["status", "--json"], ["watch", "--once", "--json"]])
def test_status_and_watch_read_the_instance_dagster_home_names_and_say_so(
        demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str]) -> None:
    home = _deployment_home(tmp_path / "deployment")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.delenv("AWP_DAGSTER_HOME", raising=False)
    result = CliRunner().invoke(cli, [*command, str(demo)], catch_exceptions=False)
    answer = json.loads(result.stdout)
    assert answer["packet_run"] == "pr-deployed", answer
    assert f"instance: {home} (DAGSTER_HOME, as the dagster CLI reads it)" in result.stderr
    assert not (demo / ".awp" / "dagster").exists()  # no embedded instance made on the side


def test_a_dagster_home_without_an_instance_is_named_and_passed_over_for_the_packets_own(
        demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty-home"
    empty.mkdir()
    monkeypatch.setenv("DAGSTER_HOME", str(empty))
    result = CliRunner().invoke(cli, ["status", str(demo)], catch_exceptions=False)
    first = result.stdout.splitlines()[0]
    assert first.startswith("instance: ") and f"embedded instance: DAGSTER_HOME={empty} holds none" in first, first
