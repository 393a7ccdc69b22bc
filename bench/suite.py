"""`make bench`: every benchmark of issue 17, each figure beside its baseline measured in the same run, the ratio
and whether the goal is met; the table is printed and written to docs/benchmarks.md.

    .venv/bin/python bench/suite.py [--skip NAME ...] [--quick] [--out docs/benchmarks.md]

Each benchmark is its own script under bench/ (run it alone for details) and runs here in a subprocess with
--json. The machine is shared: the load average before and after is recorded beside the figures; only the
ratios mean anything. `--quick` runs smaller sizes (a smoke run; its figures are not the issue's)."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent


@dataclass
class Row:
    benchmark: str
    figure: str
    baseline: str
    ratio: str
    goal: str
    verdict: str  # met | missed | not measured


@dataclass
class Bench:
    name: str
    argv: list[str]
    quick_argv: list[str]
    rows: Callable[[dict[str, Any]], list[Row]]
    command: str  # how to reproduce it alone


def _verdict(met: bool) -> str:
    return "met" if met else "missed"


def _prompt_rows(d: dict[str, Any]) -> list[Row]:
    rows = [Row(f"per-prompt overhead of `awp run`, {r['prompts']} trivial prompts", f"{r['awp_ms']} ms/prompt",
                f"bare Dagster, one run: {r['bare_ms']} ms/prompt", f"{r['ratio']}x", "<= 1.2x",
                _verdict(r["met"])) for r in d["rows"]]
    first, last = d["rows"][0], d["rows"][-1]
    rows.append(Row(f"per-prompt overhead, {first['prompts']} → {last['prompts']} prompts", f"{last['awp_ms']} ms",
                    f"{first['awp_ms']} ms", f"{d['flatness']}x", "flat (<= 1.2x)", _verdict(d["flat"])))
    return rows


def _attempt_rows(d: dict[str, Any]) -> list[Row]:
    rows = []
    engine = d["modes"]["engine"]["engine_ms"]["median"]
    for mode, data in d["modes"].items():
        if mode == "engine":
            continue
        ratio = data["ratio_vs_engine"]["median"]
        rows.append(Row(f"one Attempt's bookkeeping ({mode})", f"{data['wall_ms']['median']:.0f} ms",
                        f"`execute_attempt` alone: {engine:.0f} ms", f"{ratio:.1f}x", "<= 3x", _verdict(ratio <= 3)))
        store = data["store_bytes_per_attempt"] / 1024
        record = data["record_json_bytes"]["median"] / 1024 if data.get("record_json_bytes") else None
        steady = data.get("steady_store_bytes_per_attempt")
        rows.append(Row(f"storage growth per Attempt ({mode}), a new instance", f"{store:.1f} KiB",
                        f"`awp/record`: {record:.1f} KiB" if record else "—",
                        f"{store / record:.1f}x" if record else "—", "<= 30 KiB", _verdict(store <= 30)))
        if steady is None:
            continue
        store = steady / 1024
        rows.append(Row(f"storage growth per Attempt ({mode}), the next packet run", f"{store:.1f} KiB",
                        f"`awp/record`: {record:.1f} KiB" if record else "—",
                        f"{store / record:.1f}x" if record else "—", "<= 30 KiB", _verdict(store <= 30)))
    return rows


def _dag_rows(d: dict[str, Any]) -> list[Row]:
    return [Row(f"{d['prompts']} independent prompts on {d['prompts']} repos, {d['delay_s']:g} s each, {d['where']}",
                f"{d['all_s']} s", f"one such prompt alone: {d['one_s']} s", f"{d['ratio']}x",
                "<= 1.5x (serial: 8x)", _verdict(d["met"]))]


def _defs_rows(d: dict[str, Any]) -> list[Row]:
    size = f"definitions for {d['packets']} packets × {d['prompts']} prompts"
    return [row for prefix, how in (("", "cold (empty parse cache)"), ("warm_", "warm (parse cache written)"))
            for row in (Row(f"{size}, {how}: load time", f"{d[f'awp_{prefix}s']} s", f"bare Dagster: {d['bare_s']} s",
                            f"{d[f'{prefix}time_ratio']}x", "<= 1.5x", _verdict(d[f"{prefix}time_ratio"] <= 1.5)),
                        Row(f"{size}, {how}: peak RSS", f"{d[f'awp_{prefix}rss_mb']} MB",
                            f"bare Dagster: {d['bare_rss_mb']} MB", f"{d[f'{prefix}rss_ratio']}x", "<= 1.5x",
                            _verdict(d[f"{prefix}rss_ratio"] <= 1.5)))]


def _status_rows(d: dict[str, Any]) -> list[Row]:
    long = d["long"]
    return [Row(f"`awp status` over {d['attempts']:,} Attempts on Postgres (packet run of {long['attempts']:,})",
                f"{long['ms']} ms", f"SQL count over runs: {d['count_ms']} ms", f"{long['ratio']}x", "< 1 s",
                _verdict(long["ms"] < 1000))]


def _stream_rows(d: dict[str, Any]) -> list[Row]:
    speed, rss = d["end_to_end_mb_per_s"], d["peak_rss_mb"]
    return [Row(f"a {d['stream_mb']:g} MiB provider event stream: throughput", f"{speed} MB/s", "—", "—",
                ">= 100 MB/s", _verdict(speed >= 100)),
            Row(f"a {d['stream_mb']:g} MiB provider event stream: peak RSS", f"{rss} MB", "—", "—", "< 200 MB",
                _verdict(rss < 200))]


def _tick_rows(d: dict[str, Any]) -> list[Row]:
    return [Row(f"one recovery-sensor tick with {d['many']:,} past runs (sqlite)", f"{d['many_ms']} ms",
                f"the same tick with {d['few']:,}: {d['few_ms']} ms", f"{d['ratio']}x", "<= 1.5x",
                _verdict(d["met"]))]


def _scale_rows(d: dict[str, Any]) -> list[Row]:
    base, top = d["rows"][0], d["rows"][-1]
    rows = [Row(f"one recovery-sensor tick, {r['packets']} packets in the location (sqlite)", f"{r['tick_ms']} ms "
                f"(housekeeping tick {r['housekeeping_ms']} ms)", f"{base['packets']} packet: {base['tick_ms']} ms",
                f"{r['tick_ms'] / base['tick_ms']:.2f}x", f"<= {d['tick_goal']}x",
                _verdict(r["tick_ms"] / base["tick_ms"] <= d["tick_goal"])) for r in d["rows"][1:]]
    rows += [Row(f"the location's sensors' CPU, {r['packets']} packets (one round x rounds a minute)",
                 f"{r['cpu_s_per_min']} CPU s/min = {r['core_pct']}% of a core",
                 f"{base['packets']} packet: {base['core_pct']}%", "—", f"<= {d['cpu_goal_pct']}% of a core",
                 _verdict(r["core_pct"] <= d["cpu_goal_pct"])) for r in d["rows"] if r is top]
    return rows


def _daemon_cpu_rows(d: dict[str, Any]) -> list[Row]:
    rows: list[Row] = []
    for shape in dict.fromkeys(r.get("shape", "managed") for r in d["rows"]):
        mine = [r for r in d["rows"] if r.get("shape", "managed") == shape]
        base, where = mine[0], SHAPE_WORDS.get(shape, shape)
        rows += [Row(f"the real `dagster-daemon` ({where}), {r['packets']} packets in the location: the recovery tick",
                     f"{r['tick_ms']} ms (housekeeping tick {r['housekeeping_ms']} ms)",
                     f"{base['packets']} packet: {base['tick_ms']} ms", f"{r['tick_ratio']}x", f"<= {d['tick_goal']}x",
                     _verdict(r["tick_ratio"] is not None and r["tick_ratio"] <= d["tick_goal"]))
                 for r in mine[1:] if r["ticks"]]  # `bare` has no sensor to tick
        rows += [Row(f"the real `dagster-daemon`'s CPU ({where}: daemon + code server, measured over "
                     f"{r['window_s']:g} s), {r['packets']} packets", f"{r['cpu_s_per_min']} CPU s/min = "
                     f"{r['core_pct']}% of a core", f"{base['packets']} packet: {base['cpu_s_per_min']} CPU s/min",
                     f"{r['cpu_ratio']}x", f"<= {d['cpu_goal_pct']}% of a core",
                     _verdict(r["core_pct"] <= d["cpu_goal_pct"])) for r in mine]
    return rows


SHAPE_WORDS = {"managed": "its own code server from workspace.yaml, replaced every 60 s",
               "served": "a standing code server, as deployed",
               "bare": "that standing code server without AWP's sensors: Dagster alone"}


def _limit_rows(d: dict[str, Any]) -> list[Row]:
    if d["where"] == "under the daemon":
        return [Row("rate limit → next Attempt started, under the daemon",
                    f"{d['gap_s']} s (+{d['over_backoff_s']} s: sensor {d['sensor_s']} s after the refusal, "
                    f"run worker {d['worker_s']} s)",
                    f"the backoff: {d['backoff_s']:g} s; the packet without the limit, its run's creation to its "
                    f"Attempt's start: {d['plain_start_s']} s", f"{d['ratio']}x the baseline (over the backoff)",
                    f"<= backoff + {d['goal_s']:g} s", _verdict(d["met"]))]
    return [Row("rate limit → next Attempt started, in process", f"{d['gap_s']} s (+{d['over_backoff_s']} s)",
                f"the backoff: {d['backoff_s']:g} s; the packet without the limit: {d['plain_s']} s "
                f"(with: {d['limited_s']} s)", f"{d['ratio']}x the backoff", "<= backoff + 0.5 s",
                _verdict(d["met"]))]


def _sandbox_rows(d: dict[str, Any]) -> list[Row]:
    return [Row(f"starting an Attempt's sandbox (bwrap, egress, forwarder): {r['command']}",
                f"{r['sandboxed_ms']} ms (+{r['extra_ms']} ms; egress and forwarder {r['egress_ms']} ms)",
                f"the same, bare: {r['bare_ms']} ms", f"{r['ratio']}x",
                f"<= +{d['goal_ms']:g} ms", _verdict(r["met"])) for r in d["rows"]]


def _verifier_sandbox_rows(d: dict[str, Any]) -> list[Row]:
    return [Row(f"a contract command in the verifier's sandbox: {r['command']}",
                f"{r['sandboxed_ms']} ms ({r['extra_ms']:+} ms)",
                f"the same, bare (`isolation: none`): {r['bare_ms']} ms",
                f"{r['ratio']}x", f"<= +{d['goal_ms']:g} ms", _verdict(r["met"])) for r in d["rows"]]


def _speedup_rows(d: dict[str, Any]) -> list[Row]:
    base = {r["shape"]: r for r in d["rows"] if r["name"] in ("baseline", "parallel_baseline")}
    return [Row(f"per-prompt time of `awp run` ({r['shape']}, {d['prompts']} prompts), this private speed-up off: "
                f"{r['what']}", f"{r['ms_per_prompt']:.0f} ms (CPU {r['cpu_ms_per_prompt']:.0f} ms)",
                f"every speed-up on: {base[r['shape']]['ms_per_prompt']:.0f} ms "
                f"(CPU {base[r['shape']]['cpu_ms_per_prompt']:.0f} ms)", f"{r['ratio']}x (CPU {r['cpu_ratio']}x)",
                "what it buys (docs/upstream.md)", "measured") for r in d["rows"] if r["shape"] in base
            and r is not base[r["shape"]]]


PY = "bench/"
BENCHES = [
    Bench("prompts", [PY + "prompt_overhead.py"], [PY + "prompt_overhead.py", "--sizes", "5", "10"], _prompt_rows,
          ".venv/bin/python bench/prompt_overhead.py"),
    Bench("attempt", [PY + "attempt_overhead.py", "--repeat", "3"], [PY + "attempt_overhead.py", "--repeat", "1"],
          _attempt_rows, ".venv/bin/python bench/attempt_overhead.py (AWP_TEST_PG_URL set: also Postgres)"),
    Bench("dag", [PY + "dag_parallel.py"], [PY + "dag_parallel.py", "--prompts", "3", "--delay-ms", "2000"],
          _dag_rows, ".venv/bin/python bench/dag_parallel.py"),
    Bench("dag-daemon", [PY + "dag_parallel.py", "--daemon"],
          [PY + "dag_parallel.py", "--daemon", "--prompts", "3", "--delay-ms", "2000"], _dag_rows,
          ".venv/bin/python bench/dag_parallel.py --daemon"),
    Bench("definitions", [PY + "definitions_load.py"], [PY + "definitions_load.py", "--packets", "20",
                                                        "--repeat", "1"], _defs_rows,
          ".venv/bin/python bench/definitions_load.py"),
    Bench("stream", [PY + "stream_throughput.py", "--mb", "256"], [PY + "stream_throughput.py", "--mb", "16"],
          _stream_rows, ".venv/bin/python bench/stream_throughput.py --mb 1024"),
    Bench("tick", [PY + "sensor_tick.py"], [PY + "sensor_tick.py", "--past", "10", "1000", "--ticks", "5"],
          _tick_rows, ".venv/bin/python bench/sensor_tick.py"),
    Bench("scale", [PY + "sensor_scale.py"], [PY + "sensor_scale.py", "--packets", "1", "10", "--ticks", "3"],
          _scale_rows, ".venv/bin/python bench/sensor_scale.py"),
    Bench("daemon-cpu", [PY + "sensor_daemon_cpu.py"],
          [PY + "sensor_daemon_cpu.py", "--packets", "1", "10", "--seconds", "10"], _daemon_cpu_rows,
          ".venv/bin/python bench/sensor_daemon_cpu.py"),
    Bench("limit", [PY + "rate_limit.py"], [PY + "rate_limit.py", "--repeat", "1", "--backoff-ms", "1000"],
          _limit_rows, ".venv/bin/python bench/rate_limit.py"),
    Bench("limit-daemon", [PY + "rate_limit.py", "--daemon"],
          [PY + "rate_limit.py", "--daemon", "--repeat", "1", "--backoff-ms", "1000"], _limit_rows,
          ".venv/bin/python bench/rate_limit.py --daemon"),
    Bench("sandbox", [PY + "sandbox_start.py"], [PY + "sandbox_start.py", "--repeat", "3"], _sandbox_rows,
          ".venv/bin/python bench/sandbox_start.py"),
    Bench("verifier_sandbox", [PY + "verifier_sandbox.py"], [PY + "verifier_sandbox.py", "--repeat", "2"],
          _verifier_sandbox_rows, ".venv/bin/python bench/verifier_sandbox.py"),
    Bench("speedups", [PY + "private_speedups.py"], [PY + "private_speedups.py", "--prompts", "3", "--repeat", "1"],
          _speedup_rows, ".venv/bin/python bench/private_speedups.py"),
    Bench("status", [PY + "status_speed.py"], [PY + "status_speed.py", "--attempts", "200", "--long", "50"],
          _status_rows, ".venv/bin/python bench/status_speed.py (starts a throwaway PostgreSQL)"),
]

NOT_MEASURED: list[Row] = []  # rows of issue 17 with no benchmark yet


def run_bench(bench: Bench, quick: bool) -> tuple[list[Row], float, str]:
    argv = [sys.executable, *(bench.quick_argv if quick else bench.argv), "--json"]
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or ["no output"])[-1][:200]
        return [Row(bench.name, "—", "—", "—", "—", f"failed: {why}")], seconds, ""
    text = done.stdout[done.stdout.index("{"):]  # a script may print a line before its JSON
    return bench.rows(json.loads(text)), seconds, " ".join(argv[1:])


def render(rows: list[Row]) -> str:
    lines = ["| benchmark | figure | baseline, same run | ratio | goal | verdict |", "|---|---|---|---|---|---|"]
    lines += [f"| {r.benchmark} | {r.figure} | {r.baseline} | {r.ratio} | {r.goal} | {r.verdict} |" for r in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--skip", nargs="*", default=[], choices=[b.name for b in BENCHES])
    parser.add_argument("--quick", action="store_true", help="smaller sizes: a smoke run, not the issue's figures")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks.md")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    started = time.perf_counter()
    rows: list[Row] = []
    ran: list[str] = []
    for bench in BENCHES:
        if bench.name in args.skip:
            continue
        got, seconds, command = run_bench(bench, args.quick)
        rows += got
        ran.append(f"- `{bench.name}` ({seconds:.0f} s): `{command or bench.command}`; alone: `{bench.command}`")
        print(f"{bench.name}: {seconds:.0f} s", file=sys.stderr)
    rows += NOT_MEASURED
    total = time.perf_counter() - started
    load_after = os.getloadavg()
    table = render(rows)
    print(table)
    load = (f"load average {load_before[0]:.1f} before, {load_after[0]:.1f} after, on {os.cpu_count()} CPUs "
            "(the machine is shared with other work: absolute times are noisy, ratios are measured in one run)")
    print(f"\n{total:.0f} s in all; {load}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(f"""# Benchmarks (issue 17)

Written by `make bench` (`bench/suite.py`) on {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, in {total:.0f} s;
{load}.{' A `--quick` smoke run: smaller sizes than the goals name.' if args.quick else ''}

{table}

## How to reproduce

`make bench` runs every row (about 18 minutes on 2 CPUs; `make bench ARGS="--skip status"` leaves one out). Each
script also runs alone and prints its own details (`bench/README.md` says what each measures):

{chr(10).join(ran)}

"not measured" rows have no benchmark yet; see the issue note for why.
""", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
