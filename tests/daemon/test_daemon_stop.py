"""A stop is a decision, under a real dagster-daemon and webserver (the embedded SQLite instance `make ui`
serves): after a Ctrl-C'd `awp run`, starting the daemon launches nothing for the stopped packet run, and `awp
run --packet-run` then completes it; a run terminated in the UI stops its packet run the same way, and a
launch from the UI that carries the packet run resumes it and completes it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from dagster import AssetKey, DagsterInstance, DagsterRunStatus
from dagster._core.scheduler.instigation import InstigatorType
from deployment import Deployment, all_finished, deployment, embedded_home, init_workspaces, make_project
from e2e_support import attempt_records, runs_of_packet

from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.orchestration.ledger.factory import ledger_of

pytestmark = pytest.mark.slow

AWP = str(Path(sys.executable).parent / "awp")
FIRST = AssetKey(["held", "01_work"])


def _project(tmp_path: Path) -> tuple[Path, Path]:
    """Packet `held`: 01's first Attempt thinks for two minutes (it is stopped before it ends), its next one
    writes done.txt; 02 follows 01. Returns (project, Dagster home)."""
    src = tmp_path / "src" / "held"
    (src / "prompts").mkdir(parents=True)
    (src / "packet.yaml").write_text(yaml.safe_dump({
        "name": "held", "provider": "simulated", "repos": {"app": {"path": "./workspace", "default": True}}}))
    first = {"verify": {"files_exist": ["done.txt"]}, "simulate": {"attempts": [
        {"messages": ["thinking"], "delay_ms": 120_000}, {"writes": [{"path": "done.txt", "text": "1"}]}]}}
    second = {"verify": {"files_exist": ["two.txt"]},
              "simulate": {"attempts": [{"writes": [{"path": "two.txt", "text": "2"}]}]}}
    for name, front in (("01_work", first), ("02_more", second)):
        (src / "prompts" / f"{name}.prompt.md").write_text(f"---\n{yaml.safe_dump(front)}---\nWork.\n")
    project = make_project(tmp_path / "project", {"held": src})
    init_workspaces(project, ["held"])
    return project, embedded_home(tmp_path / "home")


def _runs(instance: DagsterInstance) -> list:
    return list(reversed(runs_of_packet(instance, "held")))


def _started(instance: DagsterInstance) -> bool:
    return bool(instance.fetch_observations(FIRST, limit=1).records)


def _sensor_holds_stopped(packet_run: str):  # noqa: ANN202
    """The recovery sensor ticked, saw the packet run, and keeps it as stopped (its cursor says so)."""
    def seen(instance: DagsterInstance) -> bool:
        for state in instance.all_instigator_state(instigator_type=InstigatorType.SENSOR):
            if state.name == "awp_recovery" and state.instigator_data is not None:
                cursor = getattr(state.instigator_data, "cursor", None)
                return bool(cursor) and packet_run in json.loads(cursor)["packets"].get("held", {}).get("stopped", [])
        return False
    return seen


def _nothing_launched_for_two_intervals(dep: Deployment, packet_run: str, runs: int) -> None:
    dep.wait_until(_sensor_holds_stopped(packet_run), 120, "the sensor to hold the packet run as stopped")
    dep.wait_for_ticks("awp_recovery", 2)  # two more ticks: a launch would show as a run
    with dep.instance() as instance:
        assert len(_runs(instance)) == runs, [(r.run_id[:8], dict(r.tags)) for r in _runs(instance)]
        assert ledger_of(instance).stop_state(packet_run).stopped


def _status(project: Path, home: Path) -> dict:
    done = subprocess.run([AWP, "status", str(project / "assets" / "held"), "--instance", str(home), "--json"],
                          capture_output=True, text=True, timeout=120)
    return json.loads(done.stdout)


def test_after_ctrl_c_the_daemon_launches_nothing_and_awp_run_packet_run_completes_it(tmp_path: Path) -> None:
    project, home = _project(tmp_path)
    packet = project / "assets" / "held"
    proc = subprocess.Popen([AWP, "run", str(packet), "--instance", str(home)], cwd=project,
                            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 180
        with DagsterInstance.from_config(str(home)) as instance:
            while not _started(instance) and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.2)
        os.killpg(proc.pid, signal.SIGINT)  # a terminal's Ctrl-C
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    stderr = proc.stderr.read().decode() if proc.stderr else ""
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and ".01.a1 was running: recorded provider_failed" in stderr, stderr
    report = _status(project, home)
    packet_run = report["packet_run"]
    assert (report["state"], report["stop"]["by"], report["stop"]["resumable"]) == ("stopped", "SIGINT", 2)

    with deployment(home, project) as dep:  # `make ui`: webserver and daemon on the stopped instance
        _nothing_launched_for_two_intervals(dep, packet_run, runs=1)

    rerun = subprocess.run([AWP, "run", str(packet), "--packet-run", packet_run, "--instance", str(home), "--json"],
                           cwd=project, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert {o["prompt"]: o["result"] for o in json.loads(rerun.stdout)["prompts"]} == {"01": "completed",
                                                                                        "02": "completed"}
    report = _status(project, home)
    assert (report["state"], report["stop"]) == ("completed", None)


def test_a_ui_cancel_stops_the_packet_run_and_a_ui_launch_of_it_resumes_and_completes_it(tmp_path: Path) -> None:
    project, home = _project(tmp_path)
    with deployment(home, project) as dep:
        first = dep.launch_job("packet__held")  # "Materialize all"
        dep.wait_until(_started, 180, "01's first Attempt to start")
        assert dep.client().terminate_run(first) is None  # the UI's Terminate button
        dep.wait_until(lambda i: all_finished(i, _runs(i)), 120, "the terminated run to end")
        with dep.instance() as instance:
            [run] = _runs(instance)
            assert run.status == DagsterRunStatus.CANCELED
            packet_run = run.tags[tags.PACKET_RUN]
            marker = ledger_of(instance).stop_state(packet_run).marker
            assert marker is not None and marker.by == "ui_cancel" and first[:8] in marker.reason
        _nothing_launched_for_two_intervals(dep, packet_run, runs=1)
        report = _status(project, home)
        # 01 stopped (resumable), 02 held behind it: nothing is failed.
        assert (report["state"], [p["state"] for p in report["prompts"]]) == ("stopped", ["stopped", "planned"])

        # "Materialize all" again, carrying the packet run (the launchpad's tag): the user resumes it.
        again = dep.client().submit_job_execution("packet__held", repository_location_name="awp_pipelines",
                                                  repository_name="__repository__",
                                                  tags={tags.PACKET_RUN: packet_run})
        dep.wait_until(lambda i: len(_runs(i)) >= 2 and all_finished(i, _runs(i)), 300, "the relaunch to end")
        dep.wait_for_ticks("awp_recovery", 2)  # it looked twice: nothing left to launch
        with dep.instance() as instance:
            runs = _runs(instance)
            assert [r.run_id for r in runs] == [first, again] and runs[1].status == DagsterRunStatus.SUCCESS
            records = [(r.identity.prompt, r.identity.number, r.result) for run in runs
                       for r in attempt_records(instance, run.run_id)]
            assert records == [("01", 1, "provider_failed"), ("01", 2, "completed"), ("02", 1, "completed")]
            assert not ledger_of(instance).stop_state(packet_run).stopped
    report = _status(project, home)
    assert (report["state"], report["stop"]) == ("completed", None)
