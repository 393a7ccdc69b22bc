"""The real sensor daemon as packets grow: `dagster-daemon run` on a project with 1, 50 and 200 packets in one
code location (the packets and their live runs of bench/sensor_scale.py), its measured CPU and its sensors'
tick latencies. Goal: the recovery tick with 200 packets <= 2x with 1 packet; the daemon <= 10% of one core.

Two shapes, each measured: `managed`, the daemon starting its own code server from workspace.yaml (`dagster dev`,
`make ui`) - Dagster replaces that server with a new one every 60 s (RELOAD_WORKSPACE_INTERVAL), which imports the
location afresh, so its cost grows with the definitions; and `served`, a standing `dagster code-server start` the
daemon reaches over gRPC (deploy/Dockerfile, the Helm and Docker kits), whose snapshot the daemon only re-reads
(every job's snapshot, every 60 s). And `bare`: `served` without AWP's two sensors (the same packets' assets,
checks, jobs and resources): what Dagster alone costs for that location; the sensors' own share is the difference.

    .venv/bin/python bench/sensor_daemon_cpu.py [--packets 1 50 200] [--seconds 60] [--shapes managed served] [--json]

For each size and shape the daemon starts on its own embedded SQLite instance (DAGSTER_HOME) with the sensor
interval as shipped; once the code location has loaded and both its recovery sensor (one for every packet) and
the housekeeping sensor have ticked twice, the CPU seconds (user + system, reaped children included) of every
process of the daemon's session (the daemon and, in `managed`, its code server) and in `served` of the code
server's session are read from /proc over --seconds. The tick latencies are the ticks' stored start and end times
within that window."""

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
from deployment import BIN, REPO_ROOT, free_port, make_project, sensor_ticks, stop_groups  # noqa: E402
from emit import emit  # noqa: E402
from sensor_scale import CPU_GOAL_PCT, TICK_GOAL, add_packet  # noqa: E402

CLOCK = os.sysconf("SC_CLK_TCK")
SHAPES = ("managed", "served", "bare")


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


def wait_ready(instance: Any, proc: subprocess.Popen[bytes], log: Path, since: float, ticks: int = 2) -> float:
    """Wait for `ticks` completed ticks of the recovery sensor and of the housekeeping sensor (two: the location
    has loaded and the daemon is in its steady loop; one for the suite's check that the script runs). The
    seconds it took."""
    from awp_pipelines.orchestration.compile.naming import RECOVERY_SENSOR
    from awp_pipelines.orchestration.sensors.housekeeping import HOUSEKEEPING_SENSOR

    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"dagster-daemon exited:\n{log.read_text()[-3000:]}")
        if all(sensor_ticks(instance, s, since) >= ticks for s in (RECOVERY_SENSOR, HOUSEKEEPING_SENSOR)):
            return time.time() - since
        time.sleep(2)
    raise SystemExit(f"the sensors did not tick within 600 s; see {log}")


BARE = """import awp_pipelines.orchestration.definitions as location
from dagster import Definitions

defs = Definitions(assets=location.defs.assets, asset_checks=location.defs.asset_checks, jobs=location.defs.jobs,
                   resources=location.defs.resources)
"""


def start_code_server(project: Path, env: dict[str, str], log: Path, bare: bool) -> subprocess.Popen[bytes]:
    """A standing code server for the location, as deploy/Dockerfile runs it (`bare`: without AWP's sensors),
    once it answers; its port on it."""
    port = free_port()
    target = ["-m", "awp_pipelines.orchestration.definitions"]
    if bare:
        (project / "bare_definitions.py").write_text(BARE, encoding="utf-8")
        target = ["-f", "bare_definitions.py"]
    with log.open("w") as out:
        proc = subprocess.Popen([str(BIN / "dagster"), "code-server", "start", "-h", "127.0.0.1", "-p", str(port),
                                 *target, "--location-name", "awp_pipelines"],
                                cwd=project, env=env, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    proc.port = port  # type: ignore[attr-defined]
    deadline = time.monotonic() + 300
    while subprocess.run([str(BIN / "dagster"), "api", "grpc-health-check", "-p", str(port)],
                         capture_output=True).returncode != 0:  # the daemon then finds it at its first load
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the code server did not start:\n{log.read_text()[-3000:]}")
        time.sleep(1)
    return proc


def workspace(project: Path, served: list[subprocess.Popen[bytes]]) -> str:
    """The daemon's workspace file: the project's own, or one reaching the standing code server."""
    if not served:
        return "workspace.yaml"
    (project / "workspace-served.yaml").write_text(
        f"load_from:\n  - grpc_server:\n      host: 127.0.0.1\n      port: {served[0].port}\n"  # type: ignore[attr-defined]
        "      location_name: awp_pipelines\n", encoding="utf-8")
    return "workspace-served.yaml"


def sessions_cpu_s(procs: list[subprocess.Popen[bytes]]) -> tuple[float, float]:
    """CPU seconds of every process of the sessions `procs` lead, and of the daemon (the last) alone."""
    each = [session_cpu_s(p.pid) for p in procs]
    return sum(total for total, _ in each), each[-1][1]


def settle(proc: subprocess.Popen[bytes], log: Path, since: float) -> float:
    """With no sensor to tick: as long as the first load takes with the sensors (about 25 s), the location
    loaded without an error."""
    time.sleep(25)
    if proc.poll() is not None or "Error loading repository location" in log.read_text():
        raise SystemExit(f"the bare location did not load:\n{log.read_text()[-3000:]}")
    return time.time() - since


def measure(count: int, seconds: float, shape: str = "managed", ready_ticks: int = 2) -> dict[str, Any]:
    from awp_pipelines.orchestration.compile.naming import RECOVERY_SENSOR
    from awp_pipelines.orchestration.ledger.instance import open_instance_folder
    from awp_pipelines.orchestration.sensors.housekeeping import HOUSEKEEPING_SENSOR

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
        procs = [start_code_server(project, env, home / "code-server.log", shape == "bare")
                 ] if shape != "managed" else []
        with log.open("w") as out:
            proc = subprocess.Popen([str(BIN / "dagster-daemon"), "run", "-w", workspace(project, procs)],
                                    cwd=project, env=env, stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
        procs.append(proc)
        try:
            ready_s = wait_ready(instance, proc, log, started, ready_ticks) if shape != "bare" \
                else settle(proc, log, started)
            cpu0, t0 = sessions_cpu_s(procs), time.time()
            time.sleep(seconds)
            cpu1, t1 = sessions_cpu_s(procs), time.time()
            packet = tick_latencies(instance, RECOVERY_SENSOR, t0, t1)
            house = tick_latencies(instance, HOUSEKEEPING_SENSOR, t0, t1)
        finally:
            stop_groups(procs)
            instance.dispose()
    per_min = (cpu1[0] - cpu0[0]) * 60 / (t1 - t0)
    daemon_per_min = (cpu1[1] - cpu0[1]) * 60 / (t1 - t0)
    return {"shape": shape, "packets": count, "ready_s": round(ready_s, 1), "window_s": round(t1 - t0, 1),
            "cpu_s_per_min": round(per_min, 2), "core_pct": round(per_min / 60 * 100, 1),
            "daemon_only_s_per_min": round(daemon_per_min, 2),
            "tick_ms": round(statistics.median(packet) * 1000, 1) if packet else None, "ticks": len(packet),
            "housekeeping_ms": round(statistics.median(house) * 1000, 1) if house else None,
            "housekeeping_ticks": len(house)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--packets", type=int, nargs="+", default=[1, 50, 200])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--shapes", nargs="+", choices=SHAPES, default=list(SHAPES))
    parser.add_argument("--ready-ticks", type=int, default=2, help="ticks of each sensor before the window")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    rows: list[dict[str, Any]] = []
    for shape in args.shapes:
        rows.extend(with_ratios([measure(n, args.seconds, shape, args.ready_ticks) for n in args.packets]))
    tops = [r for r in rows if r["packets"] == args.packets[-1]]
    figures = {"rows": rows, "tick_goal": TICK_GOAL, "cpu_goal_pct": CPU_GOAL_PCT,
               "tick_met": all(r["tick_ratio"] is not None and r["tick_ratio"] <= TICK_GOAL for r in tops),
               "cpu_met": {r["shape"]: r["core_pct"] <= CPU_GOAL_PCT for r in tops},
               "load_before": [round(x, 2) for x in load_before], "load_after": [round(x, 2) for x in os.getloadavg()]}
    lines = [f"{r['shape']:>7} {r['packets']:>4} packets: daemon {r['cpu_s_per_min']} CPU s/min ({r['core_pct']}% "
             f"of a core, {r['cpu_ratio']}x; the daemon process alone {r['daemon_only_s_per_min']}), "
             f"recovery tick {r['tick_ms']} ms ({r['tick_ratio']}x, {r['ticks']} ticks), "
             f"housekeeping tick {r['housekeeping_ms']} ms ({r['housekeeping_ticks']} ticks); "
             f"ready after {r['ready_s']} s, window {r['window_s']} s" for r in rows]
    lines += [f"{r['shape']}: tick at {r['packets']} packets / at {args.packets[0]}: {r['tick_ratio']}x (goal <= "
              f"{TICK_GOAL}x); daemon {r['core_pct']}% of a core (goal <= {CPU_GOAL_PCT}%)" for r in tops]
    lines.append(f"load average {figures['load_before']} → {figures['load_after']}")
    return emit(figures, args.json, "\n".join(lines))


def with_ratios(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each row's tick and CPU against the first row's (the fewest packets) of the same shape."""
    base = rows[0]
    for row in rows:
        row["tick_ratio"] = round(row["tick_ms"] / base["tick_ms"], 2) if row["tick_ms"] and base["tick_ms"] else None
        row["cpu_ratio"] = round(row["cpu_s_per_min"] / base["cpu_s_per_min"], 2) if base["cpu_s_per_min"] else None
    return rows


if __name__ == "__main__":
    sys.exit(main())
