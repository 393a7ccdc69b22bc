"""`awp watch --once --json`: liveness from the runs themselves (the daemon's view, whoever launches)."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import uuid
from pathlib import Path

from dagster import AssetObservation, DagsterEventType, DagsterRun, DagsterRunStatus
from dagster._core.events import AssetObservationData, DagsterEvent
from dagster._core.events.log import EventLogEntry
from e2e_support import awp

from awp_pipelines.core.engine.status_report import liveness
from awp_pipelines.core.packet.packet import load_packet
from awp_pipelines.orchestration.compile.naming import prompt_key
from awp_pipelines.orchestration.ledger.factory import ledger_of
from awp_pipelines.orchestration.ledger.history import ATTEMPT_STARTED
from awp_pipelines.orchestration.ledger.instance import open_instance

REPO_ROOT = Path(__file__).resolve().parents[2]


def _demo_without_recovery(tmp_path: Path) -> tuple[Path, str]:
    """The demo's first run only: 02 missed an item and 03 was rate limited; their repair and retry are due,
    and nothing launches them (as when the runner was killed or no daemon runs)."""
    demo = tmp_path / "demo"
    shutil.copytree(REPO_ROOT / "assets" / "demo", demo, ignore=shutil.ignore_patterns("workspace", ".awp"))
    subprocess.run(["bash", str(demo / "setup.sh")], check=True, capture_output=True)
    result = awp("run", demo, "--no-recovery", "--json")
    assert result.exit_code == 1, result.output
    return demo, json.loads(result.output)["packet_run"]


def _watch(demo: Path, *args: str) -> tuple[int, dict]:
    result = awp("watch", demo, "--once", "--json", *args)
    return result.exit_code, json.loads(result.stdout)  # the instance line goes to stderr


def test_watch_reports_not_running_when_due_work_has_no_run(tmp_path: Path) -> None:
    demo, packet_run = _demo_without_recovery(tmp_path)
    code, reading = _watch(demo, "--progress-timeout", "0")
    assert code == 1 and reading["packet_run"] == packet_run
    assert reading["violations"] == ["not_running"] and reading["pending"] == ["02", "03"]
    assert (reading["prompts"], reading["completed"], reading["state"]) == (3, 1, "running")
    assert reading["repos"] == [{"repo": "docs", "dirty_files": 0, "new_commits": 1}]
    # Within the timeout the runner may still be launching what is due: no violation yet.
    code, reading = _watch(demo, "--progress-timeout", "30")
    assert code == 0 and reading["violations"] == []


def _quiet_started_run(demo: Path, packet_run: str) -> str:
    """A repair run of 02 that started, stored its attempt_started marker ten minutes ago, and stored nothing
    since."""
    packet = load_packet(demo)
    key = prompt_key(packet, "02")
    instance = open_instance(demo)
    run_id = str(uuid.uuid4())
    try:
        instance.add_run(DagsterRun(job_name="packet__demo", run_id=run_id, status=DagsterRunStatus.STARTED,
                                    tags={"awp/packet_run": packet_run}, asset_selection=frozenset({key})))
        ledger_of(instance).note_packet_run("demo", packet_run, int(time.time() * 1000))
        marker = AssetObservation(asset_key=key, metadata={
            "awp/event": ATTEMPT_STARTED, "awp/attempt": f"{packet_run}.02.a2", "awp/attempt_number": 2,
            "awp/mode": "repair", "awp/provider": "simulated", "awp/model": "simulated-demo"})
        instance.store_event(EventLogEntry(
            error_info=None, level=10, user_message="", run_id=run_id, timestamp=time.time() - 600,
            step_key="demo__02_write_changelog", job_name="packet__demo", dagster_event=DagsterEvent(
                event_type_value=DagsterEventType.ASSET_OBSERVATION.value, job_name="packet__demo",
                step_key="demo__02_write_changelog", event_specific_data=AssetObservationData(marker))))
    finally:
        instance.dispose()
    return run_id


def test_watch_reports_progress_stale_for_a_started_run_quiet_past_the_timeout(tmp_path: Path) -> None:
    demo, packet_run = _demo_without_recovery(tmp_path)
    run_id = _quiet_started_run(demo, packet_run)
    code, reading = _watch(demo, "--progress-timeout", "5")
    assert code == 1 and reading["violations"] == ["progress_stale"]
    [current] = reading["current"]
    assert (current["prompt"], current["attempt"], current["mode"], current["dagster_run"]) == (
        "02", f"{packet_run}.02.a2", "repair", run_id)
    assert 9.5 <= current["minutes_quiet"] <= 11
    code, reading = _watch(demo, "--progress-timeout", "20")
    assert code == 0 and reading["violations"] == [] and reading["state"] == "running"



def test_an_agent_whose_events_reach_its_file_but_not_the_runs_log_is_live_and_its_progress_shows(
        tmp_path: Path) -> None:
    """The live feed forwards at most 1000 lines of an Attempt to the run's log; the agent's own event file
    keeps growing. Liveness comes from that file, and the agent's progress record shows in watch and status;
    one written for another iteration is shown stale, not dropped."""
    demo, packet_run = _demo_without_recovery(tmp_path)
    run_id = _quiet_started_run(demo, packet_run)
    attempt = f"{packet_run}.02.a2"
    events = demo / ".awp" / "events" / packet_run / "02" / f"{attempt}.jsonl"
    events.parent.mkdir(parents=True, exist_ok=True)
    events.write_text('{"type": "message_received", "text": "still building"}\n')  # written just now
    control = demo / ".awp" / "control" / packet_run / "02" / attempt
    control.mkdir(parents=True)
    record = {"token": "t" * 32, "iteration": 1, "cursor": "3/5", "unit": "", "summary": "tests pass",
              "updated_at": "2026-01-01T00:00:00+00:00"}
    (control / "progress.json").write_text(json.dumps(record))
    code, reading = _watch(demo, "--progress-timeout", "5")
    assert code == 0 and reading["violations"] == [], reading["details"]
    [current] = reading["current"]
    assert current["dagster_run"] == run_id and current["minutes_quiet"] < 1
    assert current["progress"] == "3/5 tests pass"
    status = json.loads(awp("status", demo, "--json").stdout)
    [running] = [a for p in status["prompts"] for a in p["attempts"] if a["result"] == "running"]
    assert running["progress"] == "3/5 tests pass"
    (control / "progress.json").write_text(json.dumps({**record, "iteration": 7}))
    [current] = _watch(demo, "--progress-timeout", "5")[1]["current"]
    assert current["progress"] == "(stale: written for iteration 7) 3/5 tests pass"
    # Without the agent's files the same run is quiet for ten minutes: stale.
    events.unlink()
    (control / "progress.json").unlink()
    code, reading = _watch(demo, "--progress-timeout", "5")
    assert code == 1 and reading["violations"] == ["progress_stale"]


def test_liveness_rules() -> None:
    assert liveness({"r1": 400.0}, 1, [], None, 300) == (["progress_stale"], ["run r1 stored nothing for 6.7 min"])
    assert liveness({"r1": 100.0}, 1, ["02"], None, 300) == ([], [])
    assert liveness({}, 0, ["02"], 400.0, 300)[0] == ["not_running"]
    assert liveness({}, 0, ["02"], 100.0, 300)[0] == []  # just ended: the next launch may be on its way
    assert liveness({}, 0, [], 4000.0, 300)[0] == []  # nothing due: the packet run ended


def test_the_progress_timeout_defaults_to_prompt_runners_3600_seconds() -> None:
    from awp_pipelines.cli.watching_cmd import watch_command

    [option] = [p for p in watch_command.params if p.name == "progress_timeout"]
    assert option.default * 60 == 3600  # minutes, as the option is given
