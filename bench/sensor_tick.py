"""One recovery-sensor tick as history grows: 10,000 past runs of the packet against 100, on the embedded SQLite
instance. Goal: the tick with 10,000 ≤ 1.5× the tick with 100 (the cursor keeps a tick to what ended since).

    .venv/bin/python bench/sensor_tick.py [--past 100 10000] [--ticks 15] [--json]

Each instance holds N finished runs of the packet (10 runs per packet run, ended over the last 30 days,
stored in one transaction with Dagster's own run tables) and one packet run whose run ended just now. The
cursor stands where the daemon left it before that run ended. Each tick is `evaluate_tick` of the packet's
compiled sensor (the runs query by tag and update time, the packet run's history, the decision); the figure
is the median of --ticks ticks, interleaved between the two instances."""

from __future__ import annotations

import argparse
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


def _store_past_runs(instance: Any, job: str, packet: str, count: int, newest: float) -> None:
    """`count` finished runs, the newest ending a minute before `newest`; one transaction (add_run would
    stamp every run's update time now, and commits each)."""
    from dagster import DagsterRun, DagsterRunStatus
    from dagster._core.storage.runs.schema import RunsTable, RunTagsTable
    from dagster._serdes import serialize_value

    runs, run_tags = [], []
    for i in range(count):
        ended = datetime.fromtimestamp(newest - 60 - (count - i) * 30 * 86400 / count, UTC).replace(tzinfo=None)
        status = DagsterRunStatus.SUCCESS if i % 3 else DagsterRunStatus.FAILURE
        tags = {"awp/packet": packet, "awp/packet_run": f"pr-old{i // PER_PACKET_RUN:05d}", "awp/prompt": "01"}
        run = DagsterRun(job_name=job, run_id=str(uuid.uuid4()), status=status, tags=tags)
        runs.append({"run_id": run.run_id, "pipeline_name": job, "status": status.value,
                     "run_body": serialize_value(run), "create_timestamp": ended, "update_timestamp": ended,
                     "start_time": ended.replace(tzinfo=UTC).timestamp() - 5,
                     "end_time": ended.replace(tzinfo=UTC).timestamp()})
        run_tags += [{"run_id": run.run_id, "key": k, "value": v} for k, v in tags.items()]
    with instance.run_storage.connect() as conn:
        conn.execute(RunsTable.insert(), runs)
        conn.execute(RunTagsTable.insert(), run_tags)


def setup(folder: Path, past: int) -> tuple[Any, Any, Any, str]:
    """(instance, sensor, definitions, cursor) with `past` old runs and one packet run that ended now."""
    from dagster import DagsterRun, DagsterRunStatus

    from awp_pipelines.core.packet.packet import load_packet
    from awp_pipelines.core.packet.providers_config import BUILTIN
    from awp_pipelines.orchestration.assets import packet_assets
    from awp_pipelines.orchestration.instance import open_instance_folder
    from awp_pipelines.orchestration.naming import job_name
    from awp_pipelines.orchestration.resources import AwpResource
    from awp_pipelines.orchestration.sensors import RecoveryCursor

    packet = load_packet(write_dag_packet(folder / "packet", {"01": "r1", "02": "r2"}, name="tick"))
    compiled = packet_assets(packet, BUILTIN, AwpResource(state_dir=str(folder / "state")))
    instance = open_instance_folder(folder / "instance")
    now = time.time()
    _store_past_runs(instance, job_name(packet), packet.name, past, now)
    instance.add_run(DagsterRun(job_name=job_name(packet), run_id=str(uuid.uuid4()), status=DagsterRunStatus.FAILURE,
                                tags={"awp/packet": packet.name, "awp/packet_run": "pr-new", "awp/prompt": "01"}))
    return instance, compiled.sensor, compiled.definitions(), RecoveryCursor(after=now - 30).dump()


def tick(instance: Any, sensor: Any, defs: Any, cursor: str) -> float:
    from dagster import build_sensor_context

    start = time.perf_counter()
    sensor.evaluate_tick(build_sensor_context(instance=instance, cursor=cursor, definitions=defs))
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--past", type=int, nargs=2, default=[100, 10_000], metavar=("FEW", "MANY"))
    parser.add_argument("--ticks", type=int, default=15)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="awp-bench-tick-") as tmp:
        setups = {n: setup(Path(tmp) / str(n), n) for n in args.past}
        for n in args.past:  # warm: imports, first queries
            tick(*setups[n])
        samples: dict[int, list[float]] = {n: [] for n in args.past}
        for i in range(args.ticks):
            for n in (args.past if i % 2 else args.past[::-1]):
                samples[n].append(tick(*setups[n]))
        for instance, *_ in setups.values():
            instance.dispose()
    few, many = (statistics.median(samples[n]) * 1000 for n in args.past)
    ratio = many / few
    figures = {"few": args.past[0], "many": args.past[1], "few_ms": round(few, 1), "many_ms": round(many, 1),
               "ratio": round(ratio, 2), "goal": GOAL, "met": ratio <= GOAL}
    return emit(figures, args.json, f"recovery-sensor tick: {many:.1f} ms with {args.past[1]:,} past runs, "
                f"{few:.1f} ms with {args.past[0]:,}: {ratio:.2f}x (goal <= {GOAL}x)")


if __name__ == "__main__":
    sys.exit(main())
