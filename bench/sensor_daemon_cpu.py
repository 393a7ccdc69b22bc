"""The real sensor daemon as packets grow: `dagster-daemon run` on a project with 1, 50 and 200 packets in one
code location (the packets and their live runs of bench/sensor_scale.py), its measured CPU and its sensors'
tick latencies. Goal: the recovery tick with 200 packets <= 2x with 1 packet; the daemon <= 10% of one core.

    .venv/bin/python bench/sensor_daemon_cpu.py [--packets 1 50 200] [--seconds 60] [--json]

For each size the daemon starts on its own embedded SQLite instance (DAGSTER_HOME) with the project's
workspace.yaml and the sensor interval as shipped; once the code location has loaded and both its recovery
sensor (one for every packet) and the housekeeping sensor have ticked twice, the CPU seconds (user + system, reaped
children included) of every process of the daemon's session (the daemon and its gRPC code server) are read
from /proc over --seconds. The tick latencies are the ticks' stored start and end times within that window."""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path[:0] = [str(BENCH), str(BENCH.parent / "tests"), str(BENCH.parent / "tests" / "daemon")]
from deployment import BIN, REPO_ROOT, make_project, sensor_ticks, stop_groups  # noqa: E402
from emit import emit  # noqa: E402
from sensor_scale import CPU_GOAL_PCT, TICK_GOAL, add_packet  # noqa: E402

CLOCK = os.sysconf("SC_CLK_TCK")


def session_cpu_s(sid: int) -> tuple[float, float]:
    """CPU seconds of every process in session `sid`, with the children each has reaped, and of its leader."""
    total = leader = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # ended meanwhile
        if int(fields[3]) == sid:  # field 6: session; 14-17: utime, stime, cutime, cstime
            ticks = sum(int(f) for f in fields[11:15])
            total += ticks
            leader += ticks if int(entry.name) == sid else 0
    return total / CLOCK, leader / CLOCK


def tick_latencies(instance: Any, sensor: str, start: float, end: float) -> list[float]:
    """Seconds from each tick's start to its end, for the ticks of `sensor` that started in [start, end]."""
    from dagster._core.scheduler.instigation import InstigatorType

    for state in instance.all_instigator_state(instigator_type=InstigatorType.SENSOR):
        if state.name == sensor:
            ticks = instance.get_ticks(state.instigator_origin_id, state.selector_id, after=start, before=end)
            return [t.end_timestamp - t.timestamp for t in ticks if t.end_timestamp is not None]
    return []


def wait_ready(instance: Any, proc: subprocess.Popen[bytes], log: Path, since: float) -> float:
    """Wait for two completed ticks of the recovery sensor and of the housekeeping sensor: the location has
    loaded and the daemon is in its steady loop. The seconds it took."""
    from awp_pipelines.orchestration.housekeeping import HOUSEKEEPING_SENSOR
    from awp_pipelines.orchestration.naming import RECOVERY_SENSOR

    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"dagster-daemon exited:\n{log.read_text()[-3000:]}")
        if all(sensor_ticks(instance, s, since) >= 2 for s in (RECOVERY_SENSOR, HOUSEKEEPING_SENSOR)):
            return time.time() - since
        time.sleep(2)
    raise SystemExit(f"the sensors did not tick within 600 s; see {log}")


def measure(count: int, seconds: float) -> dict[str, Any]:
    from awp_pipelines.orchestration.housekeeping import HOUSEKEEPING_SENSOR
    from awp_pipelines.orchestration.instance import open_instance_folder
    from awp_pipelines.orchestration.naming import RECOVERY_SENSOR

    with tempfile.TemporaryDirectory(prefix="awp-bench-daemon-cpu-") as tmp:
        folder = Path(tmp)
        project = make_project(folder / "project", {})
        home = folder / "home"
        instance = open_instance_folder(home)
        for n in range(count):
            add_packet(instance, project / "assets", f"p{n:03d}", folder / "state")
        log = home / "daemon.log"
        env = {**os.environ, "DAGSTER_HOME": str(home), "AWP_PROJECT_ROOT": str(project),
               "PYTHONPATH": str(REPO_ROOT)}
        started = time.time()
        with log.open("w") as out:
            proc = subprocess.Popen([str(BIN / "dagster-daemon"), "run", "-w", "workspace.yaml"], cwd=project,
                                    env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True)
        try:
            ready_s = wait_ready(instance, proc, log, started)
            cpu0, t0 = session_cpu_s(proc.pid), time.time()
            time.sleep(seconds)
            cpu1, t1 = session_cpu_s(proc.pid), time.time()
            packet = tick_latencies(instance, RECOVERY_SENSOR, t0, t1)
            house = tick_latencies(instance, HOUSEKEEPING_SENSOR, t0, t1)
        finally:
            stop_groups([proc])
            instance.dispose()
    per_min = (cpu1[0] - cpu0[0]) * 60 / (t1 - t0)
    daemon_per_min = (cpu1[1] - cpu0[1]) * 60 / (t1 - t0)
    return {"packets": count, "ready_s": round(ready_s, 1), "window_s": round(t1 - t0, 1),
            "cpu_s_per_min": round(per_min, 2), "core_pct": round(per_min / 60 * 100, 1),
            "daemon_only_s_per_min": round(daemon_per_min, 2),
            "tick_ms": round(statistics.median(packet) * 1000, 1) if packet else None, "ticks": len(packet),
            "housekeeping_ms": round(statistics.median(house) * 1000, 1) if house else None,
            "housekeeping_ticks": len(house)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--packets", type=int, nargs="+", default=[1, 50, 200])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    rows = [measure(n, args.seconds) for n in args.packets]
    base, top = rows[0], rows[-1]
    for row in rows:
        row["tick_ratio"] = round(row["tick_ms"] / base["tick_ms"], 2) if row["tick_ms"] and base["tick_ms"] else None
        row["cpu_ratio"] = round(row["cpu_s_per_min"] / base["cpu_s_per_min"], 2) if base["cpu_s_per_min"] else None
    figures = {"rows": rows, "tick_goal": TICK_GOAL, "cpu_goal_pct": CPU_GOAL_PCT,
               "tick_met": top["tick_ratio"] is not None and top["tick_ratio"] <= TICK_GOAL,
               "cpu_met": top["core_pct"] <= CPU_GOAL_PCT,
               "load_before": [round(x, 2) for x in load_before], "load_after": [round(x, 2) for x in os.getloadavg()]}
    lines = [f"{r['packets']:>4} packets: daemon {r['cpu_s_per_min']} CPU s/min ({r['core_pct']}% of a core, "
             f"{r['cpu_ratio']}x; the daemon process alone {r['daemon_only_s_per_min']}), "
             f"recovery tick {r['tick_ms']} ms ({r['tick_ratio']}x, {r['ticks']} ticks), "
             f"housekeeping tick {r['housekeeping_ms']} ms ({r['housekeeping_ticks']} ticks); "
             f"ready after {r['ready_s']} s, window {r['window_s']} s" for r in rows]
    lines.append(f"tick at {top['packets']} packets / at {base['packets']}: {top['tick_ratio']}x "
                 f"(goal <= {TICK_GOAL}x); daemon {top['core_pct']}% of a core (goal <= {CPU_GOAL_PCT}%); load average "
                 f"{figures['load_before']} → {figures['load_after']}")
    return emit(figures, args.json, "\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
