"""One recovery-sensor tick as history grows: 10,000 past runs of the packet against 100, on the embedded SQLite
instance. Goal: the tick with 10,000 ≤ 1.5× the tick with 100 (the cursor keeps a tick to what ended since).

    .venv/bin/python bench/sensor_tick.py [--past 100 10000] [--ticks 60] [--no-hold] [--json]

Each instance holds N finished runs of the packet (10 runs per packet run, ended over the last 30 days,
stored in one transaction with Dagster's own run tables), each with its Attempt's start marker and record in
the event log, a stop state in the key-value table for every past packet run (every 20th one stopped and never
resumed, so the cursor keeps it in view, as the daemon's cursor does), and one packet run whose run ended just
now. The cursor stands where the daemon left it before that run ended. Each tick is `evaluate_tick` of the
packet's compiled sensor (heartbeats, pool slots, the runs that ended since, the stops, the packet run's
history, the decision); the figure is the median of --ticks ticks after 5 warm ones, interleaved between the
two instances, with the median of the round-by-round ratios beside it.

A connection stays open on each of the instance's databases while the ticks run (--no-hold: none), as the
daemon's and the webserver's own traffic keeps one open much of the time. Without one, each of the tick's ~10
connections creates and deletes the WAL's two files, a cost that does not grow with history but differed
tenfold between the two instances' folders on this disk (strace: 0.43 against 0.04 ms per file created) and
decided the verdict either way (1.64x, then 0.76x, on the same code). Taking that constant out of both ticks
leaves a larger share to whatever grows with history: the ratio is stricter, not easier."""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from dag_packets import write_dag_packet  # noqa: E402
from emit import emit  # noqa: E402

GOAL = 1.5
PER_PACKET_RUN = 10
STOPPED_EVERY = 20  # every 20th past packet run was stopped and never resumed
WARM = 5


def _store_past_runs(instance: Any, job: str, packet: str, count: int, newest: float) -> list[str]:
    """`count` finished runs, the newest ending a minute before `newest`, their Attempt events and their packet
    runs' stop states; one transaction per table (add_run would stamp every run's update time now, and
    commits each). Returns the packet runs left stopped."""
    from dagster import DagsterRun, DagsterRunStatus
    from dagster._core.storage.runs.schema import KeyValueStoreTable, RunsTable, RunTagsTable
    from dagster._serdes import serialize_value

    from awp_pipelines.core.decisions.stops import StopMarker, StopState

    runs, run_tags, events, stops, stopped = [], [], [], [], []
    for i in range(count):
        ended = datetime.fromtimestamp(newest - 60 - (count - i) * 30 * 86400 / count, UTC).replace(tzinfo=None)
        status = DagsterRunStatus.SUCCESS if i % 3 else DagsterRunStatus.FAILURE
        packet_run = f"pr-old{i // PER_PACKET_RUN:05d}"
        tags = {"awp/packet": packet, "awp/packet_run": packet_run, "awp/prompt": "01"}
        run = DagsterRun(job_name=job, run_id=str(uuid.uuid4()), status=status, tags=tags)
        runs.append({"run_id": run.run_id, "pipeline_name": job, "status": status.value,
                     "run_body": serialize_value(run), "create_timestamp": ended, "update_timestamp": ended,
                     "start_time": ended.replace(tzinfo=UTC).timestamp() - 5,
                     "end_time": ended.replace(tzinfo=UTC).timestamp()})
        run_tags += [{"run_id": run.run_id, "key": k, "value": v} for k, v in tags.items()]
        events += _attempt_events(run.run_id, job, packet, ended)
        if i % PER_PACKET_RUN == 0:
            at = ended.replace(tzinfo=UTC).timestamp()
            left = (i // PER_PACKET_RUN) % STOPPED_EVERY == 0
            state = StopState(StopMarker(at, "sigint", "Ctrl-C")) if left else StopState(None, at)
            stops.append({"key": f"awp/stop/{packet_run}", "value": state.dump()})
            # the packet index (ledger/instance_ledger.py): how a packet's readers find its packet runs
            stops.append({"key": f"awp/packet_runs/{packet}/{packet_run}", "value": str(int(at * 1000))})
            stopped += [packet_run] if left else []
    with instance.run_storage.connect() as conn:
        conn.execute(RunsTable.insert(), runs)
        conn.execute(RunTagsTable.insert(), run_tags)
        conn.execute(KeyValueStoreTable.insert(), stops)
    with instance.event_log_storage.index_connection() as conn:
        conn.execute(_event_table().insert(), events)
    return stopped


def _event_table() -> Any:
    from dagster._core.storage.event_log.schema import SqlEventLogStorageTable

    return SqlEventLogStorageTable


def _attempt_events(run_id: str, job: str, packet: str, at: datetime) -> list[dict[str, Any]]:
    """A past Attempt's two asset events as stored: its start marker (an observation) and its record."""
    from dagster import AssetKey, AssetMaterialization, AssetObservation, DagsterEvent, DagsterEventType, EventLogEntry
    from dagster._core.events import AssetObservationData, StepMaterializationData
    from dagster._serdes import serialize_value

    key = AssetKey([packet, "01_p01"])
    rows = []
    for kind, data in ((DagsterEventType.ASSET_OBSERVATION, AssetObservationData(AssetObservation(
                            key, metadata={"awp/event": "attempt_started", "awp/attempt": "1"}))),
                       (DagsterEventType.ASSET_MATERIALIZATION, StepMaterializationData(AssetMaterialization(
                            key, metadata={"awp/attempt": "1", "awp/result": "completed"})))):
        event = DagsterEvent(kind.value, job, event_specific_data=data, step_key="01_p01")
        entry = EventLogEntry(None, "DEBUG", "", run_id, at.replace(tzinfo=UTC).timestamp(), "01_p01", job, event)
        rows.append({"run_id": run_id, "event": serialize_value(entry), "dagster_event_type": kind.value,
                     "timestamp": at, "step_key": "01_p01", "asset_key": key.to_string()})
    return rows


def setup(folder: Path, past: int) -> tuple[Any, Any, Any, str]:
    """(instance, sensor, definitions, cursor) with `past` old runs and one packet run that ended now."""
    from dagster import DagsterRun, DagsterRunStatus

    from awp_pipelines.core.packet.packet import load_packet
    from awp_pipelines.core.packet.providers_config import BUILTIN
    from awp_pipelines.orchestration.assets import packet_assets
    from awp_pipelines.orchestration.compile.naming import job_name
    from awp_pipelines.orchestration.compute.resources import AwpResource
    from awp_pipelines.orchestration.ledger.factory import ledger_of
    from awp_pipelines.orchestration.ledger.instance import open_instance_folder
    from awp_pipelines.orchestration.sensors.recovery_cursor import PacketCursor, RecoveryCursor

    packet = load_packet(write_dag_packet(folder / "packet", {"01": "r1", "02": "r2"}, name="tick"))
    compiled = packet_assets(packet, BUILTIN, AwpResource(state_dir=str(folder / "state")))
    instance = open_instance_folder(folder / "instance")
    now = time.time()
    stopped = _store_past_runs(instance, job_name(packet), packet.name, past, now)
    instance.add_run(DagsterRun(job_name=job_name(packet), run_id=str(uuid.uuid4()), status=DagsterRunStatus.FAILURE,
                                tags={"awp/packet": packet.name, "awp/packet_run": "pr-new", "awp/prompt": "01"}))
    ledger_of(instance).note_packet_run(packet.name, "pr-new", int(time.time() * 1000))
    cursor = RecoveryCursor(after=now - 30, packets={packet.name: PacketCursor(stopped=set(stopped))})
    return instance, compiled.sensor, compiled.definitions(), cursor.dump()


def tick(instance: Any, sensor: Any, defs: Any, cursor: str) -> float:
    from dagster import build_sensor_context

    start = time.perf_counter()
    sensor.evaluate_tick(build_sensor_context(instance=instance, cursor=cursor, definitions=defs))
    return time.perf_counter() - start


def hold_databases(folder: Path) -> list[sqlite3.Connection]:
    """A connection open on each database of the instance (its WAL files then stay between the tick's own)."""
    held = [sqlite3.connect(db) for db in sorted(folder.rglob("*.db"))]
    for conn in held:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchall()
    return held


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--past", type=int, nargs=2, default=[100, 10_000], metavar=("FEW", "MANY"))
    parser.add_argument("--ticks", type=int, default=60)
    parser.add_argument("--no-hold", action="store_true", help="no connection held open on the databases")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="awp-bench-tick-") as tmp:
        setups = {n: setup(Path(tmp) / str(n), n) for n in args.past}
        held = [] if args.no_hold else [c for n in args.past for c in hold_databases(Path(tmp) / str(n) / "instance")]
        for _ in range(WARM):  # warm: imports, first queries
            for n in args.past:
                tick(*setups[n])
        samples: dict[int, list[float]] = {n: [] for n in args.past}
        for i in range(args.ticks):
            for n in (args.past if i % 2 else args.past[::-1]):
                samples[n].append(tick(*setups[n]))
        for conn in held:
            conn.close()
        for instance, *_ in setups.values():
            instance.dispose()
    few, many = (statistics.median(samples[n]) * 1000 for n in args.past)
    ratio = many / few
    paired = statistics.median(m / f for f, m in zip(*(samples[n] for n in args.past), strict=True))
    figures = {"few": args.past[0], "many": args.past[1], "few_ms": round(few, 1), "many_ms": round(many, 1),
               "ratio": round(ratio, 2), "paired_ratio": round(paired, 2), "ticks": args.ticks,
               "held": not args.no_hold, "goal": GOAL, "met": ratio <= GOAL}
    return emit(figures, args.json, f"recovery-sensor tick: {many:.1f} ms with {args.past[1]:,} past runs, "
                f"{few:.1f} ms with {args.past[0]:,}: {ratio:.2f}x, paired {paired:.2f}x (goal <= {GOAL}x; "
                f"medians of {args.ticks} ticks)")


if __name__ == "__main__":
    sys.exit(main())
