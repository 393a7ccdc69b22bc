"""8 independent prompts on 8 repos, each agent taking 5 s (the simulated provider's delay), under `awp run` in
process, against one such prompt alone, measured back to back in this run. Goal: wall ≤ 1.5× (Prompt Runner
runs them one after another: 8×).

    .venv/bin/python bench/dag_parallel.py [--prompts 8] [--delay-ms 5000] [--daemon] [--repeat 1] [--json]

In process, each run is a fresh `awp run` process on a fresh packet and instance; the wall time includes its
start. With --daemon, both packets sit in one project served by `dagster-webserver` and `dagster-daemon` on the
embedded SQLite instance (tests/daemon/deployment.py), each job launched as "Materialize all" launches it; the
wall time is the run's, from its creation to its end as stored. With --repeat N, N pairs (one prompt, then all)
back to back: the medians of each, and the median of the pairs' ratios (a noisy pair moves it less)."""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from dag_packets import write_dag_packet  # noqa: E402
from emit import emit  # noqa: E402

GOAL = 1.5


def timed_run(folder: Path, prompts: int, delay_ms: int) -> float:
    packet = write_dag_packet(folder / "packet", {f"{i + 1:02d}": f"r{i + 1}" for i in range(prompts)}, delay_ms)
    awp = str(Path(sys.executable).parent / "awp")
    start = time.perf_counter()
    done = subprocess.run([awp, "run", str(packet), "--instance", str(folder / "instance")], capture_output=True,
                          text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"awp run failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return wall


def daemon_runs(folder: Path, prompts: int, delay_ms: int) -> tuple[float, float]:
    """(one prompt, all prompts): each packet's job run under a real webserver and daemon."""
    from under_daemon import launch_and_settle, served

    sources = {"one": write_dag_packet(folder / "src" / "one", {"01": "r1"}, delay_ms, name="one"),
               "many": write_dag_packet(folder / "src" / "many", {f"{i + 1:02d}": f"r{i + 1}" for i in range(prompts)},
                                        delay_ms, name="many")}
    walls = []
    with served(folder, sources) as dep:
        for name in ("one", "many"):
            record = launch_and_settle(dep, name)[0]
            assert record.dagster_run.status.value == "SUCCESS", record.dagster_run.status
            walls.append(record.end_time - record.create_timestamp.timestamp())
    return walls[0], walls[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--delay-ms", type=int, default=5000)
    parser.add_argument("--daemon", action="store_true", help="under dagster-webserver and dagster-daemon")
    parser.add_argument("--repeat", type=int, default=1, help="pairs of runs (medians)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    pairs = []
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory(prefix="awp-bench-dag-") as tmp:
            if args.daemon:
                pairs.append(daemon_runs(Path(tmp), args.prompts, args.delay_ms))
            else:
                pairs.append((timed_run(Path(tmp) / "one", 1, args.delay_ms),
                              timed_run(Path(tmp) / "many", args.prompts, args.delay_ms)))
    one, many = (statistics.median(p[i] for p in pairs) for i in (0, 1))
    ratio = statistics.median(m / o for o, m in pairs)
    figures = {"where": "under the daemon" if args.daemon else "in process", "prompts": args.prompts,
               "delay_s": args.delay_ms / 1000, "one_s": round(one, 2), "all_s": round(many, 2),
               "ratio": round(ratio, 2), "goal": GOAL, "met": ratio <= GOAL, "serial_ratio": args.prompts,
               "repeat": args.repeat, "pairs": [[round(o, 2), round(m, 2)] for o, m in pairs]}
    return emit(figures, args.json, f"{args.prompts} independent prompts on {args.prompts} repos, "
                f"{args.delay_ms / 1000:g} s each: {many:.1f} s; one alone {one:.1f} s; {ratio:.2f}x (goal <= "
                f"{GOAL}x; serial would be {args.prompts}x)")


if __name__ == "__main__":
    sys.exit(main())
