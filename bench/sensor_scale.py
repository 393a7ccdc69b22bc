"""The sensors of one code location as packets grow: 1, 50 and 200 packets on one embedded SQLite instance.
Goal: the recovery-sensor tick with 200 packets <= 2x the same tick with 1 packet, and the sensor
daemon's CPU for the whole location <= 10% of one core.

    .venv/bin/python bench/sensor_scale.py [--packets 1 50 200] [--ticks 20] [--json]

Each packet has one prompt and, as under load, one live run whose compute beats and holds its work tree's
pool slot, and one ended run. The tick is `evaluate_tick` of the location's one recovery sensor, which serves
every packet (median of --ticks after warm ones); the location's housekeeping sensor's tick beside it. The
daemon's CPU per minute is one round of the location's sensors (the recovery and the housekeeping sensor, the
process CPU time they take in this process) times the rounds a minute holds (a tick every TICK_EVERY_S):
the sensors' evaluation, which grows with packets, not the daemon's fixed loop around it."""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from dag_packets import write_dag_packet  # noqa: E402
from emit import emit  # noqa: E402

TICK_GOAL = 2.0
CPU_GOAL_PCT = 10.0
WARM = 3


def setup(folder: Path, count: int) -> tuple[Any, Any, Any]:
    """The instance, the location's recovery sensor and its definitions, with a live beating run holding a slot
    and an ended run per packet."""
    from awp_pipelines.orchestration.assets import location_definitions
    from awp_pipelines.orchestration.compile.naming import RECOVERY_SENSOR
    from awp_pipelines.orchestration.ledger.instance import open_instance_folder

    instance = open_instance_folder(folder / "instance")
    defs = location_definitions([add_packet(instance, folder, f"p{n:03d}", folder / "state") for n in range(count)])
    return instance, defs.resolve_sensor_def(RECOVERY_SENSOR), defs


def add_packet(instance: Any, folder: Path, name: str, state: Path) -> Any:
    """A one-prompt packet at folder/name with a live run (beating, holding its tree's slot) and an ended run
    on `instance`: the compiled packet."""
    from dagster import DagsterRun, DagsterRunStatus

    from awp_pipelines.core.packet.packet import load_packet
    from awp_pipelines.core.packet.providers_config import BUILTIN
    from awp_pipelines.dagster_compat.pools import claim_slot, ensure_pool
    from awp_pipelines.orchestration.assets import packet_assets
    from awp_pipelines.orchestration.compute.resources import AwpResource
    from awp_pipelines.orchestration.ledger.factory import ledger_of
    from awp_pipelines.orchestration.ledger.liveness import Beat

    packet = load_packet(write_dag_packet(folder / name, {"01": "r1"}, name=name))
    compiled = packet_assets(packet, BUILTIN, AwpResource(state_dir=str(state)))
    job = f"packet__{name}"
    tags = {"awp/packet": name, "awp/packet_run": f"pr-{name}", "awp/prompt": "01"}
    live = instance.add_run(DagsterRun(job_name=job, run_id=str(uuid.uuid4()), status=DagsterRunStatus.STARTED,
                                       tags=tags))
    instance.add_run(DagsterRun(job_name=job, run_id=str(uuid.uuid4()), status=DagsterRunStatus.SUCCESS, tags=tags))
    ledger_of(instance).beat(Beat(live.run_id, f"{name}__01", name, "bench-host", 1, time.time() + 3600, 15.0))
    pool = compiled.binding.pools["01"]
    ensure_pool(instance, pool)
    claim_slot(instance, pool, live.run_id, f"{name}__01")
    return compiled


def timed(sensor: Any, instance: Any, defs: Any, cursors: dict[str, str | None]) -> tuple[float, float]:
    """One tick (its cursor carried over, as the daemon does): wall seconds and process CPU seconds."""
    from dagster import build_sensor_context

    wall, cpu = time.perf_counter(), time.process_time()
    result = sensor.evaluate_tick(build_sensor_context(instance=instance, cursor=cursors.get(sensor.name),
                                                       definitions=defs))
    cursors[sensor.name] = result.cursor or cursors.get(sensor.name)
    return time.perf_counter() - wall, time.process_time() - cpu


def measure(count: int, ticks: int) -> dict[str, Any]:
    from awp_pipelines.orchestration.sensors.housekeeping import HOUSEKEEPING
    from awp_pipelines.orchestration.sensors.recovery import TICK_EVERY_S

    with tempfile.TemporaryDirectory(prefix="awp-bench-scale-") as tmp:
        instance, recovery, defs = setup(Path(tmp), count)
        cursors: dict[str, str | None] = {}
        for _ in range(WARM):
            timed(recovery, instance, defs, cursors)
            timed(HOUSEKEEPING, instance, None, cursors)
        tick = statistics.median(timed(recovery, instance, defs, cursors)[0] for _ in range(ticks))
        house = statistics.median(timed(HOUSEKEEPING, instance, None, cursors)[0] for _ in range(ticks))
        rounds = []
        for _ in range(3):  # one round: every sensor of the location once
            rounds.append(timed(recovery, instance, defs, cursors)[1] + timed(HOUSEKEEPING, instance, None, cursors)[1])
        instance.dispose()
    round_cpu = statistics.median(rounds)
    per_minute = round_cpu * 60 / TICK_EVERY_S
    return {"packets": count, "tick_ms": round(tick * 1000, 1), "housekeeping_ms": round(house * 1000, 1),
            "round_cpu_s": round(round_cpu, 3), "cpu_s_per_min": round(per_minute, 2),
            "core_pct": round(per_minute / 60 * 100, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--packets", type=int, nargs="+", default=[1, 50, 200])
    parser.add_argument("--ticks", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rows = [measure(n, args.ticks) for n in args.packets]
    base, top = rows[0], rows[-1]
    ratio = top["tick_ms"] / base["tick_ms"]
    figures = {"rows": rows, "ratio": round(ratio, 2), "tick_goal": TICK_GOAL, "cpu_goal_pct": CPU_GOAL_PCT,
               "tick_met": ratio <= TICK_GOAL, "cpu_met": top["core_pct"] <= CPU_GOAL_PCT}
    lines = [f"{r['packets']:>4} packets: tick {r['tick_ms']} ms, housekeeping {r['housekeeping_ms']} ms, "
             f"sensors {r['cpu_s_per_min']} CPU s/min ({r['core_pct']}% of a core)" for r in rows]
    lines.append(f"tick at {top['packets']} packets / at {base['packets']}: {ratio:.2f}x (goal <= {TICK_GOAL}x); "
                 f"CPU {top['core_pct']}% of a core (goal <= {CPU_GOAL_PCT}%)")
    return emit(figures, args.json, "\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
