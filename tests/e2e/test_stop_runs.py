"""A stop is a decision (stops.py): the recovery sensor launches nothing for a packet run the user stopped, keeps
it in view, and goes on with it once the user resumes it. A run cancelled by the user stops its packet run.
Real Dagster runs of the demo packet on a real instance; the sensor evaluated as the daemon evaluates it."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
from pathlib import Path

from dagster import DagsterInstance, DagsterRunStatus, SensorResult, build_sensor_context
from e2e_support import decided_launch

from awp_pipelines.core.decisions.stops import StopMarker
from awp_pipelines.core.packet.packet import load_packet
from awp_pipelines.core.packet.providers_config import BUILTIN
from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.orchestration.assets import CompiledPacket, packet_assets
from awp_pipelines.orchestration.compute.resources import AwpResource
from awp_pipelines.orchestration.ledger.instance_ledger import InstanceLedger
from awp_pipelines.orchestration.ledger.status_read import status_report
from awp_pipelines.orchestration.ledger.stop_store import StopStore

REPO_ROOT = Path(__file__).resolve().parents[2]


def _demo(tmp_path: Path) -> CompiledPacket:
    demo = tmp_path / "demo"
    shutil.copytree(REPO_ROOT / "assets" / "demo", demo, ignore=shutil.ignore_patterns("workspace", ".awp"))
    subprocess.run(["bash", str(demo / "setup.sh")], check=True, capture_output=True)
    return packet_assets(load_packet(demo), BUILTIN, AwpResource())


def _tick(compiled: CompiledPacket, instance: DagsterInstance, cursor: str | None = None) -> SensorResult:
    context = build_sensor_context(instance=instance, definitions=compiled.definitions(), cursor=cursor)
    return compiled.sensor.evaluate_tick(context)  # type: ignore[return-value]


def _first_packet_run(compiled: CompiledPacket, instance: DagsterInstance) -> str:
    """"Materialize all" of the demo, in process: its packet run (02 and 03 fail their contracts)."""
    first = compiled.definitions().resolve_job_def("packet__demo").execute_in_process(
        instance=instance, raise_on_error=False)
    return f"pr-{first.run_id[:8]}"


def test_a_stopped_packet_run_gets_no_launch_until_it_is_resumed(tmp_path: Path) -> None:
    compiled = _demo(tmp_path)
    with DagsterInstance.ephemeral() as instance:
        packet_run = _first_packet_run(compiled, instance)
        stops = StopStore(instance)
        stops.stop(packet_run, StopMarker.from_signal(signal.SIGINT, 1.0, "awp run was stopped"))
        stopped = _tick(compiled, instance)
        assert stopped.run_requests == []  # without the stop: 02's repair and 03's retry
        report = status_report(InstanceLedger(instance), compiled.binding, packet_run)
        assert report.state == "stopped" and report.stop is not None and report.stop.by == "SIGINT"
        assert report.stop.resumable == 2  # 01 completed; 02 and 03 go on when resumed
        assert [p.state for p in report.prompts] == ["completed", "stopped", "stopped"]
        # Ticks go on: the packet run stays in view, and its launches come once it is resumed.
        still = _tick(compiled, instance, stopped.cursor)
        assert still.run_requests == []
        assert stops.resume(packet_run) is not None and not stops.state(packet_run).stopped
        resumed = _tick(compiled, instance, still.cursor)
        assert dict(decided_launch(r)[:2] for r in resumed.run_requests) == {"02": "repair", "03": "retry"}
        # No stop: 02 and 03 are due.
        assert status_report(InstanceLedger(instance), compiled.binding, packet_run).state == "running"


def test_a_run_cancelled_by_the_user_stops_its_packet_run(tmp_path: Path) -> None:
    compiled = _demo(tmp_path)
    with DagsterInstance.ephemeral() as instance:
        packet_run = _first_packet_run(compiled, instance)
        # The UI's Terminate on a relaunch of the packet run before it started: the run ends CANCELED.
        queued = instance.create_run_for_job(compiled.definitions().resolve_job_def("packet__demo"),
                                             tags={tags.PACKET_RUN: packet_run},
                                             status=DagsterRunStatus.NOT_STARTED)
        instance.report_run_canceled(queued)
        tick = _tick(compiled, instance)
        assert tick.run_requests == []
        marker = StopStore(instance).marker(packet_run)
        assert marker is not None and marker.by == "ui_cancel" and queued.run_id[:8] in marker.reason


def test_awp_resume_lifts_the_stop_and_goes_on_with_the_packet_run(tmp_path: Path) -> None:
    from e2e_support import awp

    from awp_pipelines.orchestration.ledger.instance import open_instance

    packet = _demo(tmp_path).packet
    first = awp("run", packet.root, "--no-recovery", "--json")
    assert first.exit_code == 1, first.output
    packet_run = json.loads(first.output)["packet_run"]
    instance = open_instance(packet.root)
    try:
        StopStore(instance).stop(packet_run, StopMarker.from_signal(signal.SIGTERM, 1.0, "awp run was stopped"))
    finally:
        instance.dispose()
    status = awp("status", packet.root)
    assert f"packet run {packet_run} · stopped (resumable: 2 prompts)" in status.output, status.output
    lifted = awp("resume", packet.root, "--lift-only")
    assert lifted.exit_code == 0 and f"packet run {packet_run} resumed (it was stopped by SIGTERM" in lifted.output
    assert "· running ·" in awp("status", packet.root).output  # no stop: its retries and repairs are due
    resumed = awp("resume", packet.root, "--packet-run", packet_run)
    assert resumed.exit_code == 0, resumed.output
    assert f"3/3 prompts done (packet run {packet_run})" in resumed.output
