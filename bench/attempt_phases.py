"""Where one Attempt's time goes in process on SQLite, by phase and by owner: a stack sampler (stdlib, one thread
reading the main thread's stack every millisecond) over `run_packet` of the demo (the `sqlite` mode of
attempt_overhead.py: a fresh instance, 5 Attempts), each sample's interval given to one phase.

    .venv/bin/python bench/attempt_phases.py [--repeat N] [--json]
    .venv/bin/python bench/attempt_phases.py --compare BEFORE.json[,…] AFTER.json[,…]   # means of --json runs

Owner: **engine** (the Attempt's own work under `execute_attempt`: the baseline), **AWP** (AWP's code is on
the stack inside the run, or the driver's own work between runs: its reads and writes through the ledger, the
events it logs, its decisions), **Dagster** (Dagster's run with no AWP frame under it: run creation, plan,
resources, its own events, the step's result turned into materialization, check and output events). A sample's
phase is its innermost frame that names one (PHASES); the owner decides which list is searched. Compare shares,
not absolute milliseconds (the sampler itself costs some time, and the machine is shared).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from types import FrameType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from attempt_overhead import Demo, _dagster_repetition, _isolate, _sqlite_instance  # noqa: E402

# (path fragment, function names or "*") -> phase; the innermost match on the stack wins.
AWP_PHASES: list[tuple[str, tuple[str, ...], str]] = [
    ("ledger/instance_ledger.py", ("history",), "history reads (ledger.history)"),
    ("ledger/instance_ledger.py", ("*",), "other ledger calls: {func}"),
    ("ledger/lease.py", ("*",), "leases (tree, account slots)"),
    ("ledger/heartbeat.py", ("*",), "heartbeat"),
    ("ledger/reaper.py", ("*",), "dead runners' runs (reaper)"),
    ("ledger/settling.py", ("*",), "settle"),
    ("ledger/run_states.py", ("*",), "run states (end_run)"),
    ("compute/attempt_marks.py", ("mark_started",), "start marker (claim, account use, observation)"),
    ("compute/attempt_marks.py", ("said",), "log lines"),
    ("compute/attempt_stops.py", ("*",), "stops"),
    ("compute/launch_choice.py", ("*",), "launch choice"),
    ("compute/work_trees.py", ("*",), "dead work, checkpoints"),
    ("compute/target_check.py", ("*",), "target probes"),
    ("compute/prompt_compute.py", ("_result", "_launcher", "attempt_failure"), "record events (materialization, "
                                                                              "observation, failure)"),
    ("compile/metadata.py", ("*",), "record metadata"),
    ("compute/resources.py", ("*",), "AwpResource"),
    ("core/records/live_lines.py", ("*",), "live lines (LiveFeed)"),
    ("compute/attempt_compute.py", ("*",), "compute: building the Attempt"),
    ("driver/in_process.py", ("_execute",), "driver: around the run"),
    ("driver/in_process.py", ("*",), "driver: between runs (decide, outcomes)"),
    ("core/decisions/", ("*",), "decide (pure)"),
    ("orchestration/assets.py", ("*",), "asset compute entry"),
]
DAGSTER_PHASES: list[tuple[str, tuple[str, ...], str]] = [
    ("execution/compute_logs.py", ("*",), "compute log capture (a tail -F and a Python watcher per stream)"),
    ("", ("create_run_for_job", "create_run", "_construct_run_with_snapshots", "create_run_for_test"),
     "run creation (snapshots, run row)"),
    ("", ("create_execution_plan", "_get_execution_plan_from_run", "build"), "execution plan"),
    ("", ("get_subset", "get_job_def_for_subset_selection", "get_implicit_job_def_for_assets",
          "get_job_def"), "job subset for the selection"),
    ("", ("resource_initialization_event_generator", "resource_initialization_manager",
          "single_resource_event_generator"), "resources init"),
    ("", ("_process_asset_results_to_events", "_step_output_error_checked_user_event_sequence"),
     "the step's result: materialization, check and output events"),
    ("", ("_build_asset_check_evaluation_planned_events", "_get_asset_check_planned_events"),
     "check-planned events"),
    ("concurrency", ("*",), "concurrency pools: {func}"),
    ("", ("handle_new_event", "store_event", "report_dagster_event", "log_dagster_event", "report_engine_event"),
     "other event writes"),
    ("", ("get_run_by_id", "get_run_record_by_id", "get_runs", "handle_run_event", "add_run_tags",
          "get_run_records"), "run reads and status"),
    ("", ("execute_in_process",), "other run execution"),
]
ENGINE = ("core/engine/attempts.py", "execute_attempt")


def _matches(rules: list[tuple[str, tuple[str, ...], str]], file: str, func: str) -> str | None:
    for fragment, funcs, phase in rules:
        if fragment in file and ("*" in funcs or func in funcs):
            return phase.format(func=func)
    return None


def _event_written(frame: FrameType) -> str | None:
    """The Dagster event type a `handle_new_event` frame is storing (`log line` for a plain log record)."""
    if frame.f_code.co_name != "handle_new_event":
        return None
    entry = frame.f_locals.get("event")
    kind = getattr(getattr(entry, "dagster_event", None), "event_type_value", None)
    return str(kind) if kind else "log line"


def classify(frame: FrameType | None) -> tuple[str, str]:
    """(owner, phase) of one stack, leaf first; a phase that is writing an event names the event's type."""
    owner, phase = _classify(frame)
    while frame is not None:
        written = _event_written(frame)
        if written:
            return owner, f"{phase} [{written}]"
        frame = frame.f_back
    return owner, phase


def _classify(frame: FrameType | None) -> tuple[str, str]:
    frames: list[tuple[str, str]] = []
    while frame is not None:
        frames.append((frame.f_code.co_filename, frame.f_code.co_name))
        frame = frame.f_back
    # The innermost AWP frame decides the owner: the engine's, AWP's own (any AWP frame inside the run), or
    # Dagster's (only the driver's `_execute` above Dagster's frames).
    # AWP's patch of Dagster's log mirrors only changes their process group: their start is Dagster's.
    awp = next((i for i, (file, _) in enumerate(frames)
                if "awp_pipelines/" in file and "dagster_compat/log_mirrors.py" not in file), None)
    if awp is None:
        return "other", "outside run_packet"
    if any(ENGINE[0] in file and func == ENGINE[1] for file, func in frames[awp:]):
        return "engine", "execute_attempt"
    file, func = frames[awp]
    if "driver/in_process.py" in file and func == "_execute" and awp > 0:
        for f, fn in frames[:awp]:
            phase = _matches(DAGSTER_PHASES, f, fn)
            if phase:
                return "Dagster", phase
        return "Dagster", "other run execution"
    for f, fn in frames[awp:]:
        if "awp_pipelines/" in f:
            phase = _matches(AWP_PHASES, f, fn)
            if phase:
                return "AWP", phase
    return "AWP", f"other: {Path(file).name}:{func}"


class Sampler:
    def __init__(self, interval_s: float = 0.001) -> None:
        self.interval_s = interval_s
        self.spent: dict[tuple[str, str], float] = defaultdict(float)
        self._target = threading.get_ident()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        last = time.perf_counter()
        while not self._stop.wait(self.interval_s):
            frame = sys._current_frames().get(self._target)
            now = time.perf_counter()
            self.spent[classify(frame)] += now - last
            last = now

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


def measure(repeat: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="awp-phases-") as tmp:
        scratch = Path(tmp)
        _isolate(scratch / "home")
        demo = Demo.create(scratch)
        totals: dict[tuple[str, str], float] = defaultdict(float)
        attempts = 0
        for i in range(repeat + 1):  # the first: untimed warm-up (imports, first-use caches)
            demo.reset()
            folder = Path(tempfile.mkdtemp(prefix="phases-", dir=scratch))
            with _sqlite_instance(folder / "dagster") as (instance, _):
                if i == 0:
                    _dagster_repetition("sqlite", demo, folder / "state", instance)
                else:
                    with Sampler() as sampler:
                        rep = _dagster_repetition("sqlite", demo, folder / "state", instance, skip_stored=True)
                    attempts += len(rep.samples)
                    for key, spent in sampler.spent.items():
                        totals[key] += spent
            shutil.rmtree(folder, ignore_errors=True)
    per_attempt = {f"{owner}|{phase}": ms * 1000 / attempts for (owner, phase), ms in totals.items()}
    import awp_pipelines  # the checkout measured (PYTHONPATH first: bench/attempt_before_after.sh's "before")

    return {"attempts": attempts, "source": str(Path(awp_pipelines.__file__).parent.parent),
            "ms_per_attempt": per_attempt}


def render(result: dict[str, Any]) -> str:
    rows = sorted(((k.split("|", 1)[0], k.split("|", 1)[1], v) for k, v in result["ms_per_attempt"].items()),
                  key=lambda row: -row[2])
    by_owner: dict[str, float] = defaultdict(float)
    for owner, _, ms in rows:
        by_owner[owner] += ms
    total = sum(by_owner.values())
    lines = [f"run_packet of the demo in process on SQLite ({result['source']}), {result['attempts']} Attempts "
             f"sampled: {total:.0f} ms per Attempt"]
    for owner in sorted(by_owner, key=lambda o: -by_owner[o]):
        lines.append(f"{owner:8} {by_owner[owner]:7.1f} ms/Attempt  {100 * by_owner[owner] / total:5.1f}%")
        lines += [f"    {phase:<62} {ms:7.1f} ms  {100 * ms / total:5.1f}%"
                  for o, phase, ms in rows if o == owner and ms >= 0.5]
    return "\n".join(lines)


def _mean(paths: str) -> dict[tuple[str, str], float]:
    runs = [json.loads(Path(p).read_text(encoding="utf-8"))["ms_per_attempt"] for p in paths.split(",")]
    mean: dict[tuple[str, str], float] = defaultdict(float)
    for run in runs:
        for key, ms in run.items():
            owner, phase = key.split("|", 1)
            mean[(owner, phase)] += ms / len(runs)
    return mean


def compare(before: str, after: str) -> str:
    """Two sides' mean ms per Attempt, by owner (with bookkeeping ÷ engine) and by phase."""
    sides = {"before": _mean(before), "after": _mean(after)}
    lines = []
    for name, spent in sides.items():
        owners: dict[str, float] = defaultdict(float)
        for (owner, _), ms in spent.items():
            owners[owner] += ms
        engine = owners.get("engine", 0.0) or float("nan")
        lines.append(f"{name:6}: {sum(owners.values()):6.1f} ms per Attempt; " + ", ".join(
            f"{owner} {ms:.1f}" for owner, ms in sorted(owners.items(), key=lambda kv: -kv[1]))
            + f"; all / engine {sum(owners.values()) / engine:.2f}x (attempt_overhead.py's `x engine`)")
    a, b = sides["before"], sides["after"]
    lines.append(f"  {'owner':8} {'phase':<78} {'before':>7} {'after':>7} {'diff':>7}")
    for key in sorted(set(a) | set(b), key=lambda k: -(a.get(k, 0.0) + b.get(k, 0.0))):
        if a.get(key, 0.0) + b.get(key, 0.0) >= 1.0:
            lines.append(f"  {key[0]:8} {key[1]:<78} {a.get(key, 0.0):7.1f} {b.get(key, 0.0):7.1f} "
                         f"{b.get(key, 0.0) - a.get(key, 0.0):+7.1f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="sampled packet runs (default 3), after one warm-up")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"),
                        help="print two sides' --json outputs (comma-separated files: their mean) side by side")
    args = parser.parse_args(argv)
    if args.compare:
        print(compare(*args.compare))
        return 0
    result = measure(args.repeat)
    print(json.dumps(result, indent=2) if args.json else render(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
