"""What each private Dagster speed-up AWP keeps (awp_pipelines/dagster_compat/, docs/upstream.md) buys: the
per-prompt time of `awp run` with every speed-up on (the baseline) and with each one switched off in turn,
measured in one run, as ms per prompt and the ratio to the baseline of the same shape.

    .venv/bin/python bench/private_speedups.py [--prompts 10] [--repeat 2] [--only NAME ...] [--json]

Each measurement is a fresh process (`--one NAME`; a parallel run's forkserver lives as long as its process):
it switches the one speed-up off by patching the compat function back to Dagster's public or plain behaviour in
that process only (no production toggle), runs `api.run` once untimed on a 2-prompt packet, one prompt at a
time (imports, first-use caches; no forkserver yet), then times `api.run` (compile and run, as `awp run` does)
on a fresh packet and instance. Two shapes: `chain` (prompts one after another, steps in process) and
`parallel` (independent prompts on their own repos: steps forked from the forkserver, where the step preload
and the migrations read once act). Rounds interleave the variants in a rotating order; the figures are medians
over rounds. The machine is shared: only the ratios within one run mean anything."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent / "tests"))
from dag_packets import write_dag_packet  # noqa: E402
from emit import emit  # noqa: E402


def _replace(module: object, name: str, value: object) -> None:
    """Patch `module.name` (this process only); a name gone from the code fails the bench, not a silent no-op."""
    if not hasattr(module, name):
        raise SystemExit(f"{getattr(module, '__name__', module)}.{name} is gone: update bench/private_speedups.py")
    setattr(module, name, value)


def _plain_claim() -> None:
    """Every claim through Dagster's `claim_concurrency_slot` (still under AWP's lock: the race fix stays)."""
    from awp_pipelines.dagster_compat import pools

    _replace(pools, "_claim_idle", lambda *_: False)


def _plain_free() -> None:
    """Dagster's public `free_concurrency_slot_for_step`: three transactions."""
    from awp_pipelines.dagster_compat import pools

    _replace(pools, "_free_in_one",
             lambda storage, run_id, holder: storage.free_concurrency_slot_for_step(run_id, holder))


def _events_by_run() -> None:
    """A packet run's Attempt events through the public per-run `all_logs`, as for non-SQL storages."""
    from awp_pipelines.dagster_compat import events
    from awp_pipelines.orchestration.ledger import instance_ledger

    _replace(instance_ledger, "attempt_events", events.events_by_run)


def _per_run_event_log() -> None:
    """Dagster's default SQLite event log (a database per run) instead of the consolidated one."""
    from awp_pipelines.orchestration.ledger import instance

    _replace(instance, "embedded_config", lambda _folder: instance.EMBEDDED_CONFIG)


def _plain_config_schema() -> None:
    """The op config as a plain mapping of fields, converted per asset as Dagster does by default."""
    from awp_pipelines.dagster_compat import config_schema

    _replace(config_schema, "_shared_schema_class", lambda: None)


def _no_job_preload() -> None:
    """No job built in the forkserver: Dagster's executor starts it with the preload modules of its public config
    (AWP's imports still), and each step builds its job."""
    from awp_pipelines.dagster_compat import executor
    from awp_pipelines.orchestration.driver import parallel

    def dagster_starts_it(_preload: object, _job: object) -> None:
        return None

    _replace(executor, "start_step_server", dagster_starts_it)
    _replace(parallel, "start_step_server", dagster_starts_it)


def _migrations_per_step() -> None:
    """The forkserver builds the job but does not read the migration scripts: each step reads them."""
    from awp_pipelines.orchestration.compute import step_executor

    preload = "awp_pipelines.orchestration.compute.step_preload"
    if preload not in step_executor.STEP_PRELOAD:
        raise SystemExit(f"{preload} is no longer preloaded: update bench/private_speedups.py")
    _replace(step_executor, "STEP_PRELOAD", [name if name != preload else "private_speedups_preload"
                                             for name in step_executor.STEP_PRELOAD])
    # The forkserver does not take this process's sys.path (Python's multiprocessing passes it, then ignores
    # it), only the environment: there a failed preload import is skipped silently.
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(BENCH), os.environ.get("PYTHONPATH")]))


@dataclass(frozen=True)
class Variant:
    name: str
    shape: str  # chain | parallel
    off: Callable[[], None] | None  # what switches the speed-up off; None: the baseline
    what: str  # the speed-up (docs/upstream.md names it)


VARIANTS = [
    Variant("baseline", "chain", None, "every speed-up on"),
    Variant("claim_idle", "chain", _plain_claim, "pools.py `_claim_idle`: an idle pool claimed in one transaction"),
    Variant("free_in_one", "chain", _plain_free, "pools.py `_free_in_one`: slot freed and dequeued in one "
                                                 "transaction"),
    Variant("events_sql", "chain", _events_by_run, "events.py: Attempt events in one indexed query"),
    Variant("consolidated_log", "chain", _per_run_event_log, "embedded_instance.py: one consolidated SQLite "
                                                             "event log"),
    Variant("config_schema", "chain", _plain_config_schema, "config_schema.py: one shared op config schema"),
    Variant("parallel_baseline", "parallel", None, "every speed-up on"),
    Variant("job_preload", "parallel", _no_job_preload, "executor.py `start_step_server`: the job built once in "
                                                        "the forkserver"),
    Variant("migrations", "parallel", _migrations_per_step, "migrations.py: alembic's scripts read once in the "
                                                            "forkserver"),
]
BY_NAME = {v.name: v for v in VARIANTS}


def _packet(folder: Path, shape: str, prompts: int) -> Path:
    ids = [f"{i + 1:02d}" for i in range(prompts)]
    if shape == "parallel":
        return write_dag_packet(folder, {pid: f"r{pid}" for pid in ids})
    return write_dag_packet(folder, dict.fromkeys(ids, "w"), 0, {pid: [ids[i - 1]] for i, pid in enumerate(ids) if i})


def _timed_run(folder: Path, shape: str, prompts: int, parallel: int | None = None) -> tuple[float, float]:
    """(wall, this process's CPU) seconds of one `api.run`."""
    from awp_pipelines import api

    packet = _packet(folder / "packet", shape, prompts)
    start, cpu = time.perf_counter(), time.process_time()
    result = api.run(packet, instance=folder / "instance", recover=False, parallel=parallel)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    assert all(o.completed for o in result.outcomes), [o.result for o in result.outcomes if not o.completed]
    return seconds, cpu


def one(name: str, prompts: int) -> dict[str, float]:
    """In this process: the speed-up switched off, one warm-up run, one timed run."""
    variant = BY_NAME[name]
    if variant.off is not None:
        variant.off()
    with tempfile.TemporaryDirectory(prefix="awp-bench-speedups-") as tmp:
        # One at a time: no forkserver yet. A process has one for good, built with its first parallel run's
        # job; the timed run's steps would build their own and the job preload would act in no variant.
        _timed_run(Path(tmp) / "warm", variant.shape, 2, parallel=1)
        seconds, cpu = _timed_run(Path(tmp) / "timed", variant.shape, prompts)
    return {"ms_per_prompt": seconds * 1e3 / prompts, "cpu_ms_per_prompt": cpu * 1e3 / prompts}


def measure(name: str, prompts: int) -> dict[str, float]:
    done = subprocess.run([sys.executable, __file__, "--one", name, "--prompts", str(prompts)],
                          capture_output=True, text=True, cwd=BENCH.parent)
    if done.returncode != 0:
        raise SystemExit(f"{name} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


BASELINES = {"chain": "baseline", "parallel": "parallel_baseline"}


def _row(variant: Variant, samples: dict[str, list[dict[str, float]]]) -> dict[str, object]:
    """Medians over rounds, and their ratio to the same shape's baseline (wall and this process's CPU)."""
    def median(name: str, key: str) -> float:
        return statistics.median(s[key] for s in samples[name])

    base = BASELINES[variant.shape]
    ms, cpu = median(variant.name, "ms_per_prompt"), median(variant.name, "cpu_ms_per_prompt")
    return {"name": variant.name, "shape": variant.shape, "what": variant.what, "ms_per_prompt": round(ms, 1),
            "cpu_ms_per_prompt": round(cpu, 1), "baseline_ms": round(median(base, "ms_per_prompt"), 1),
            "ratio": round(ms / median(base, "ms_per_prompt"), 2),
            "cpu_ratio": round(cpu / median(base, "cpu_ms_per_prompt"), 2),
            "samples_ms": [round(s["ms_per_prompt"], 1) for s in samples[variant.name]]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prompts", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=2, help="rounds; each variant once per round")
    parser.add_argument("--only", nargs="*", default=[], choices=list(BY_NAME), help="these variants and their "
                        "shape's baseline")
    parser.add_argument("--one", choices=list(BY_NAME), help=argparse.SUPPRESS)  # a child measurement
    parser.add_argument("--names-only", action="store_true", help="switch every speed-up off in this process and "
                        "stop: each name it patches still exists (the suite's check that this script has not rotted)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(one(args.one, args.prompts)))
        return 0
    if args.names_only:
        for variant in VARIANTS:
            if variant.off is not None:
                variant.off()
        return emit({"rows": [], "patched": [v.name for v in VARIANTS if v.off]}, args.json,
                    "every speed-up's names are still there")
    chosen = [v for v in VARIANTS if not args.only or v.name in args.only
              or (v.off is None and any(BY_NAME[o].shape == v.shape for o in args.only))]
    load_before = os.getloadavg()[0]
    samples: dict[str, list[dict[str, float]]] = {v.name: [] for v in chosen}
    for round_ in range(args.repeat):
        order = chosen[round_ % len(chosen):] + chosen[:round_ % len(chosen)]
        for variant in order:
            samples[variant.name].append(measure(variant.name, args.prompts))
            print(f"round {round_ + 1} {variant.name}: {samples[variant.name][-1]}", file=sys.stderr)
    load_after = os.getloadavg()[0]
    rows = [_row(variant, samples) for variant in chosen]
    figures = {"prompts": args.prompts, "repeat": args.repeat, "load_before": round(load_before, 1),
               "load_after": round(load_after, 1), "cpus": os.cpu_count(), "rows": rows}
    lines = [f"{r['shape']:8} {r['name']:17} {r['ms_per_prompt']:7.0f} ms/prompt {r['ratio']:5.2f}x   "
             f"CPU {r['cpu_ms_per_prompt']:5.0f} ms/prompt {r['cpu_ratio']:5.2f}x   "
             f"{'(off) ' if r['name'] not in BASELINES.values() else ''}{r['what']}" for r in rows]
    lines.append(f"{args.prompts} prompts per run, medians of {args.repeat}; load average {load_before:.1f} "
                 f"before, {load_after:.1f} after, on {os.cpu_count()} CPUs")
    return emit(figures, args.json, "\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
