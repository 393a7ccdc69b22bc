"""The recovery sensor's tick reads the runs that ended since its cursor (one index range on status and update
time, whatever the packet) and looks only at its own packet's: its cursor moves past every run that ended,
so the next tick starts after them, and no other packet's history is read."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import pytest
from dag_packets import write_dag_packet
from dagster import DagsterRun, DagsterRunStatus, build_sensor_context

from awp_pipelines.core.packet.packet import load_packet
from awp_pipelines.core.packet.providers_config import BUILTIN
from awp_pipelines.orchestration.assets import packet_assets
from awp_pipelines.orchestration.compile.naming import job_name
from awp_pipelines.orchestration.compute.resources import AwpResource
from awp_pipelines.orchestration.ledger.instance import open_instance_folder
from awp_pipelines.orchestration.ledger.instance_ledger import InstanceLedger
from awp_pipelines.orchestration.sensors.recovery_cursor import PacketCursor, RecoveryCursor


def test_a_tick_moves_past_other_packets_runs_and_reads_only_its_own(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    packet = load_packet(write_dag_packet(tmp_path / "packet", {"01": "r1"}, name="tick"))
    compiled = packet_assets(packet, BUILTIN, AwpResource(state_dir=str(tmp_path / "state")))
    read: list[str] = []
    real = InstanceLedger.history
    monkeypatch.setattr(InstanceLedger, "history",
                        lambda ledger, packet_run, keys: read.append(packet_run) or real(ledger, packet_run, keys))
    instance = open_instance_folder(tmp_path / "instance")
    try:
        start = time.time() - 1
        for job, tags in ((job_name(packet), {"awp/packet_run": "pr-mine"}),
                          ("packet__other", {"awp/packet_run": "pr-other"})):
            instance.add_run(DagsterRun(job_name=job, run_id=str(uuid.uuid4()), status=DagsterRunStatus.FAILURE,
                                        tags=tags))
            time.sleep(1.1)  # SQLite stores update times by the second: the other run ends a second later
        other = instance.get_run_records()[0]  # the newest: the other packet's run ended last
        assert other.dagster_run.job_name == "packet__other"
        result = compiled.sensor.evaluate_tick(build_sensor_context(
            instance=instance, cursor=RecoveryCursor(after=start).dump(), definitions=compiled.definitions()))
    finally:
        instance.dispose()
    assert read == ["pr-mine"]
    assert json.loads(result.cursor or "{}")["after"] >= other.update_timestamp.timestamp()


def test_the_stopped_packet_runs_the_cursor_keeps_cost_one_read_not_one_each(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Stopped packet runs stay in the cursor until resumed, over months: their stops are read in one query,
    a resumed one is looked at again and a stopped one is not."""
    from awp_pipelines.core.decisions.stops import StopMarker
    from awp_pipelines.core.records import run_tags
    from awp_pipelines.orchestration.ledger import instance_ledger

    packet = load_packet(write_dag_packet(tmp_path / "packet", {"01": "r1"}, name="tick"))
    compiled = packet_assets(packet, BUILTIN, AwpResource(state_dir=str(tmp_path / "state")))
    reads: list[set[str]] = []
    real_get = instance_ledger.kv_get

    def kv_get(instance, keys):  # type: ignore[no-untyped-def]
        if any(k.startswith(run_tags.STOP_KEY) for k in keys):  # the stops' reads
            reads.append(keys)
        return real_get(instance, keys)

    monkeypatch.setattr(instance_ledger, "kv_get", kv_get)
    looked: list[str] = []
    real_history = InstanceLedger.history
    monkeypatch.setattr(InstanceLedger, "history", lambda ledger, packet_run, keys: looked.append(packet_run)
                        or real_history(ledger, packet_run, keys))
    instance = open_instance_folder(tmp_path / "instance")
    try:
        stopped = {f"pr-{i:02d}" for i in range(30)}
        for packet_run in stopped:
            InstanceLedger(instance).stop(packet_run, StopMarker(1.0, "sigint", "Ctrl-C"))
        InstanceLedger(instance).resume("pr-07", time.time())
        reads.clear()
        result = compiled.sensor.evaluate_tick(build_sensor_context(
            instance=instance, cursor=RecoveryCursor(time.time(), {"tick": PacketCursor(stopped=stopped)}).dump(),
            definitions=compiled.definitions()))
    finally:
        instance.dispose()
    assert looked == ["pr-07"]
    assert set(json.loads(result.cursor or "{}")["packets"]["tick"]["stopped"]) == stopped - {"pr-07"}
    assert len([keys for keys in reads if len(keys) > 1]) == 1 and len(reads) <= 2, [len(k) for k in reads]
