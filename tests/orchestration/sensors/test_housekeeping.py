"""One housekeeping loop per instance (orchestration/housekeeping.py): the location's sensor does the work no
packet owns, one query per concern whatever the number of packets; the recovery sensor does none of it and reads
the ended runs once a tick for every packet; under run monitoring the ended runs' slots are left to Dagster."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from dagster import DagsterInstance, DagsterRunStatus, build_sensor_context
from dagster._core.test_utils import create_run_for_test
from housekeeping_support import counted_queries

from awp_pipelines.core.records.run_tags import RUNNER_KEY
from awp_pipelines.dagster_compat.kvs import kv_set
from awp_pipelines.dagster_compat.pools import claim_slot, ensure_pool, slot_holders
from awp_pipelines.orchestration.ledger.factory import ledger_of
from awp_pipelines.orchestration.ledger.instance import open_instance_folder
from awp_pipelines.orchestration.ledger.liveness import Beat
from awp_pipelines.orchestration.sensors.housekeeping import HOUSEKEEPING, run_monitoring_frees_slots, sweep


@pytest.fixture
def instance(tmp_path: Path) -> Iterator[DagsterInstance]:
    opened = open_instance_folder(tmp_path / "home")
    yield opened
    opened.dispose()


def _packets(instance: DagsterInstance, count: int) -> tuple[list[str], list[str]]:
    """`count` packets, each with one silent run (beat 10 minutes old) and one ended run holding a slot."""
    silent, ended = [], []
    now = time.time()
    for n in range(count):
        packet = f"p{n:03d}"
        run = create_run_for_test(instance, job_name=f"packet__{packet}", status=DagsterRunStatus.STARTED).run_id
        ledger_of(instance).beat(Beat(run, f"{packet}__01", packet, "host-b", 4242, now - 600, 15.0))
        silent.append(run)
        done = create_run_for_test(instance, job_name=f"packet__{packet}", status=DagsterRunStatus.SUCCESS).run_id
        kv_set(instance, {RUNNER_KEY + done: "h:1:1"})  # an `awp run` run: its slots go at once
        ensure_pool(instance, f"awp_{packet}_docs")
        assert claim_slot(instance, f"awp_{packet}_docs", done, "step")
        ended.append(done)
    return silent, ended


def test_a_sweep_fails_every_packets_silent_runs_and_frees_every_ended_runs_slots(instance: DagsterInstance) -> None:
    silent, ended = _packets(instance, 3)
    swept = sweep(ledger_of(instance))
    assert sorted(swept.failed) == sorted(silent) and sorted(swept.freed) == sorted(ended)
    assert not ledger_of(instance).beats() and not slot_holders(instance)


@pytest.mark.parametrize("packets", [1, 12])
def test_a_sweep_reads_each_concern_once_whatever_the_number_of_packets(instance: DagsterInstance,
                                                                         packets: int) -> None:
    """Every packet with a live run that beats and holds its slot (a tick's usual state): the beats, their
    runs; the pools' holders, their runs. Four reads, 1 packet or 12 (before: per packet and per pool)."""
    now = time.time()
    for n in range(packets):
        packet = f"p{n:03d}"
        run = create_run_for_test(instance, job_name=f"packet__{packet}", status=DagsterRunStatus.STARTED).run_id
        ledger_of(instance).beat(Beat(run, f"{packet}__01", packet, "host-b", 4242, now, 15.0))
        ensure_pool(instance, f"awp_{packet}_docs")
        assert claim_slot(instance, f"awp_{packet}_docs", run, "step")
    with counted_queries() as seen:
        swept = sweep(ledger_of(instance))
    assert swept.failed == [] and swept.freed == [] and len(slot_holders(instance)) == packets
    reads = [s for s in seen if s.lstrip().upper().startswith("SELECT")]
    assert len(reads) == 4, reads
    # The beats' live runs are read as ids: no run deserialised while every beat is fresh.
    assert "run_body" not in reads[1] and "run_id" in reads[1], reads[1]


def test_under_run_monitoring_the_sensor_leaves_ended_runs_slots_to_dagster(instance: DagsterInstance) -> None:
    """The embedded instance's dagster.yaml enables run monitoring with `free_slots_after_run_end_seconds`: the
    daemon that ticks the sensor frees ended runs' slots itself. A silent run's slots still go at once."""
    silent, ended = _packets(instance, 2)
    assert run_monitoring_frees_slots(instance)
    HOUSEKEEPING.evaluate_tick(build_sensor_context(instance=instance))
    assert all(r.status == DagsterRunStatus.FAILURE for r in instance.get_runs() if r.run_id in silent)
    assert slot_holders(instance) == set(ended)


def test_a_packets_recovery_sensor_does_no_housekeeping(instance: DagsterInstance, tmp_path: Path) -> None:
    """A packet's tick reads its own packet only: another packet's silent run and the ended runs' slots are
    the housekeeping sensor's, so 200 packets do not repeat them 200 times a tick."""
    from awp_pipelines.core.packet.packet import load_packet
    from awp_pipelines.core.packet.providers_config import BUILTIN
    from awp_pipelines.orchestration.assets import packet_assets
    from awp_pipelines.orchestration.compute.resources import AwpResource
    from tests.dag_packets import write_dag_packet

    silent, ended = _packets(instance, 1)
    compiled = packet_assets(load_packet(write_dag_packet(tmp_path / "packet", {"01": "r1"}, name="p000")),
                             BUILTIN, AwpResource(state_dir=str(tmp_path / "state")))
    with counted_queries() as seen:
        compiled.sensor.evaluate_tick(build_sensor_context(instance=instance, definitions=compiled.definitions()))
    assert seen, "the tick read nothing: it did not run"
    assert not any("kvs" in s or "concurrency" in s or "pending_steps" in s for s in seen), seen
    assert [b.run_id for b in ledger_of(instance).beats()] == silent and slot_holders(instance) == set(ended)


def test_the_locations_one_recovery_sensor_reads_the_ended_runs_once_for_every_packet(instance: DagsterInstance,
                                                                                     tmp_path: Path) -> None:
    """Three packets, each with a run that ended: one tick of the location's sensor reads the ended runs once
    and each packet's run history once; its next tick reads the ended runs again (nothing new: no history)."""
    from awp_pipelines.core.packet.packet import load_packet
    from awp_pipelines.core.packet.providers_config import BUILTIN
    from awp_pipelines.orchestration.assets import location_definitions, packet_assets
    from awp_pipelines.orchestration.compute.resources import AwpResource
    from tests.dag_packets import write_dag_packet

    compiled = [packet_assets(load_packet(write_dag_packet(tmp_path / name, {"01": "r1"}, name=name)), BUILTIN,
                              AwpResource(state_dir=str(tmp_path / "state"))) for name in ("pa", "pb", "pc")]
    for c in compiled:
        create_run_for_test(instance, job_name=c.job.name, status=DagsterRunStatus.FAILURE,
                            tags={"awp/packet": c.packet.name, "awp/packet_run": f"pr-{c.packet.name}"})
    defs = location_definitions(compiled)
    [sensor] = defs.sensors

    def tick(cursor: str | None) -> tuple[str | None, int, int]:
        with counted_queries() as seen:
            result = sensor.evaluate_tick(build_sensor_context(instance=instance, definitions=defs, cursor=cursor))
        ended = sum(1 for s in seen if "FROM runs" in s and "runs.update_timestamp >" in s)
        return result.cursor, ended, sum(1 for s in seen if "run_tags_filter0.value" in s)

    cursor, ended, histories = tick(None)
    assert (ended, histories) == (1, 3)
    assert tick(cursor)[1:] == (1, 0)
