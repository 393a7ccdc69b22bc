"""Packets launched as the UI launches them, left to a real dagster-daemon: the recovery sensor does what
`awp run` does in process. On the test PostgreSQL server (the shipped dagster.yaml) and on the embedded
SQLite instance the README points the UI at."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
import requests
import sqlalchemy as sa
import yaml
from dagster import DagsterEventType, DagsterInstance
from deployment import REPO_ROOT, Deployment, all_finished, deployment, make_project
from e2e_support import attempt_records, decided_launch, runs_of_packet

from awp_pipelines.orchestration.ledger.instance import embedded_config

pytestmark = pytest.mark.slow

ROTATE_PROVIDERS = yaml.safe_dump({"accounts": {"sim-a": {"provider": "simulated"},
                                                "sim-b": {"provider": "simulated"}}})
LIMITED = {"messages": ["working"], "delay_ms": 1500,
           "error": {"kind": "provider_rate_limit", "message": "You've hit your limit"}}


def _rotate_packet(root: Path) -> Path:
    """Two prompts on two repos (they may run side by side), both on account sim-a first. 01 is rate
    limited there and falls back to sim-b; 02 completes on sim-a. Each Attempt takes 1.5 s."""
    (root / "prompts").mkdir(parents=True)
    (root / "packet.yaml").write_text(yaml.safe_dump({
        "name": "rotate", "provider": "simulated", "accounts": ["sim-a", "sim-b"],
        "repos": {"a": {"path": "./repo_a", "default": True}, "b": {"path": "./repo_b"}}}))
    done = {"01": {"delay_ms": 1500, "writes": [{"repo": "a", "path": "one.txt", "text": "1"}]},
            "02": {"delay_ms": 1500, "writes": [{"repo": "b", "path": "two.txt", "text": "2"}]}}
    for pid, repo, attempts in (("01", "a", [LIMITED, done["01"]]), ("02", "b", [done["02"]])):
        file = done[pid]["writes"][0]["path"]
        front = {"id": pid, "targets": [repo], "depends_on": [], "verify": {"files_exist": [f"{repo}:{file}"]},
                 "commit": f"docs: prompt {pid}", "simulate": {"attempts": attempts}}
        (root / "prompts" / f"{pid}_work_{repo}.prompt.md").write_text(f"---\n{yaml.safe_dump(front)}---\nWork.\n")
    (root / "setup.sh").write_text(
        "set -e\ncd \"$(dirname \"$0\")\"\nfor r in repo_a repo_b; do git init -q -b main $r; "
        "git -C $r -c user.name=t -c user.email=t@t commit -q --allow-empty -m init; done\n")
    return root


@pytest.fixture
def project(tmp_path: Path) -> Path:
    rotate = _rotate_packet(tmp_path / "src" / "rotate")
    proj = make_project(tmp_path / "project", {"demo": REPO_ROOT / "assets" / "demo", "rotate": rotate},
                        providers=ROTATE_PROVIDERS)
    for name in ("demo", "rotate"):
        subprocess.run(["bash", str(proj / "assets" / name / "setup.sh")], check=True, capture_output=True)
    return proj


def _postgres_home(folder: Path, db: sa.URL) -> tuple[Path, dict[str, str]]:
    """The shipped dagster.yaml, as is, with its variables pointing at the test database."""
    folder.mkdir(parents=True)
    (folder / "dagster.yaml").write_text((REPO_ROOT / "dagster.yaml").read_text())
    env = {"AWP_PG_USER": db.username or "", "AWP_PG_PASSWORD": db.password or "", "AWP_PG_HOST": db.host or "",
           "AWP_PG_DB": db.database or "", "AWP_PG_PORT": str(db.port or 5432)}
    return folder, env


@pytest.fixture(params=["postgres", "sqlite"])
def running(request: pytest.FixtureRequest, project: Path, tmp_path: Path) -> Iterator[Deployment]:
    if request.param == "postgres":
        db = request.getfixturevalue("fresh_pg_database")
        home, env = _postgres_home(tmp_path / "home", db)
        for key, value in env.items():
            request.getfixturevalue("monkeypatch").setenv(key, value)
    else:  # the embedded instance, as `awp run` and the README's UI command create it
        home, env = project / "assets" / "demo" / ".awp" / "dagster", {}
        home.mkdir(parents=True)
        (home / "dagster.yaml").write_text(embedded_config(home))
    with deployment(home, project, env) as dep:
        yield dep


def _runs(instance: DagsterInstance, packet: str) -> list:
    return list(reversed(runs_of_packet(instance, packet)))


def _settled(packet: str, count: int):  # type: ignore[no-untyped-def]
    return lambda i: len(_runs(i, packet)) >= count and all_finished(i, _runs(i, packet))


def _records(instance: DagsterInstance, runs: list) -> list[dict]:
    from e2e_support import attempt_records

    return [r.model_dump(mode="json") for run in runs for r in attempt_records(instance, run.run_id)]


def _step_windows(instance: DagsterInstance, runs: list) -> list[tuple[float, float, str]]:
    """(start, end, step) of every step, from the stored STEP_START and STEP_SUCCESS/FAILURE events."""
    windows = []
    for run in runs:
        starts: dict[str, float] = {}
        kinds = {DagsterEventType.STEP_START, DagsterEventType.STEP_SUCCESS, DagsterEventType.STEP_FAILURE}
        for entry in instance.all_logs(run.run_id, of_type=kinds):
            step = entry.step_key or ""
            if entry.dagster_event.event_type == DagsterEventType.STEP_START:
                starts[step] = entry.timestamp
            elif step in starts:
                windows.append((starts.pop(step), entry.timestamp, step))
    return windows


def _overlaps(windows: list[tuple[float, float, str]]) -> list[tuple[str, str]]:
    windows = sorted(windows)
    return [(a[2], b[2]) for a, b in zip(windows, windows[1:], strict=False) if b[0] < a[1]]


def test_ui_launch_of_the_demo_completes_through_sensor_launched_repair_and_retry(running: Deployment) -> None:
    first = running.launch_job("packet__demo")
    running.wait_until(_settled("demo", 3), 300, "the demo's initial run, its repair and its retry")
    with running.instance() as instance:
        runs = _runs(instance, "demo")
        assert runs[0].run_id == first and len(runs) == 3  # nothing ran twice
        recovery = {decided_launch(r)[0]: r for r in runs[1:]}
        assert {p: decided_launch(r)[1] for p, r in recovery.items()} == {"02": "repair", "03": "retry"}
        for run in recovery.values():
            assert run.tags["dagster/sensor_name"] == "awp_recovery"
            assert run.tags["dagster/parent_run_id"] == first and run.tags["dagster/root_run_id"] == first
            assert run.tags["awp/packet_run"] == runs[0].tags["awp/packet_run"]
            assert run.status.value == "SUCCESS"
        reasons = {p: attempt_records(instance, r.run_id)[0].target.reason for p, r in recovery.items()}
        assert "unmet verifier items" in reasons["02"] and "provider_rate_limit" in reasons["03"]
        records = _records(instance, runs)
        modes = {(r["identity"]["prompt"], r["identity"]["number"]): (r["identity"]["mode"], r["result"])
                 for r in records}
        assert modes == {("01", 1): ("run", "completed"), ("02", 1): ("run", "verification_failed"),
                         ("03", 1): ("run", "provider_failed"), ("02", 2): ("repair", "completed"),
                         ("03", 2): ("retry", "completed")}
        for record in records:
            if record["identity"]["number"] == 2:
                assert record["identity"]["parent_run"] == first and record["target"]["reason"]
        # The three prompts share one work tree: no two of their steps ever ran at once.
        assert _overlaps(_step_windows(instance, runs)) == []
    repo = running.project / "assets" / "demo" / "workspace"
    log = subprocess.run(["git", "-C", str(repo), "log", "--format=%(trailers:key=AWP-Attempt,valueonly)%x00"],
                         capture_output=True, text=True, check=True).stdout
    attempts = sorted(a.strip().rsplit(".", 1)[1] for a in log.split("\0") if a.strip())
    assert attempts == ["a1", "a2", "a2"]  # one trailed commit per prompt: 01.a1, 02.a2, 03.a2
    status = subprocess.run(["git", "-C", str(repo), "status", "--porcelain"], capture_output=True, text=True)
    assert status.stdout == ""


def test_a_rate_limited_account_falls_back_through_the_sensor_and_no_account_runs_two_attempts(
        running: Deployment) -> None:
    first = running.launch_job("packet__rotate")
    running.wait_until(_settled("rotate", 2), 300, "the rotate packet's run and its fallback")
    with running.instance() as instance:
        runs = _runs(instance, "rotate")
        assert runs[0].run_id == first and len(runs) == 2
        fallback = runs[1]
        assert decided_launch(fallback) == ("01", "fallback", "sim-b") and fallback.tags["awp/account"] == "sim-b"
        assert fallback.status.value == "SUCCESS"
        records = _records(instance, runs)
        first = [(r["target"]["account"], r["result"]) for r in records if r["identity"]["prompt"] == "01"]
        assert first == [("sim-a", "provider_failed"), ("sim-b", "completed")]
        assert [r["result"] for r in records if r["identity"]["prompt"] == "02"] == ["completed"]
        # 02 ran on sim-a beside 01 (the lease made it wait), or on sim-b once sim-a rested after its limit:
        # either way no account ever ran two Attempts at once.
        for account in ("sim-a", "sim-b"):
            spans = sorted((datetime.fromisoformat(r["started_at"]), datetime.fromisoformat(r["ended_at"]))
                           for r in records if r["target"]["account"] == account)
            assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:], strict=False)), (account, spans)
        assert len([r for r in records if r["target"]["account"] == "sim-a"]) >= 1


JOB_RUNS = """query JobRuns($filter: RunsFilter!) {
  runsOrError(filter: $filter) { ... on Runs { results { runId tags { key value } } } }
}"""


def test_runs_made_by_awp_run_are_listed_with_the_job_as_launched_by_awp_run(running: Deployment) -> None:
    """The query the job's Runs tab sends: the job name and the code location's repository tag."""
    from e2e_support import awp

    packet = running.project / "assets" / "rotate"
    result = awp("run", packet, "--instance", running.home, "--json")
    assert result.exit_code == 0, result.output
    variables = {"filter": {"pipelineName": "packet__rotate",
                            "tags": [{"key": ".dagster/repository", "value": "__repository__@awp_pipelines"}]}}
    answer = requests.post(f"http://127.0.0.1:{running.port}/graphql", json={"query": JOB_RUNS,
                                                                           "variables": variables}, timeout=30)
    runs = answer.json()["data"]["runsOrError"]["results"]
    assert len(runs) == 2  # the selection, then 01's fallback
    for run in runs:
        tags = {t["key"]: t["value"] for t in run["tags"]}
        # The Runs list shows every tag outside Dagster's namespace on a line of its own: only these.
        assert {k for k in tags if not k.startswith(("dagster/", ".dagster/"))} <= {"awp/packet_run", "awp/account"}
