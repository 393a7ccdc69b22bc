"""Every benchmark script runs, at a tiny size, so none can rot unseen (bench/sensor_tick.py once failed on a changed
`RecoveryCursor` and no test noticed). The figures of a tiny run mean nothing; what is asserted is that each script
ends with exit 0 and JSON its row builder in bench/suite.py reads. Slow: each is its own process."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from repo_paths import REPO_ROOT as REPO

BENCH = REPO / "bench"
# Modules the scripts import, not scripts of their own.
HELPERS = {"emit.py", "under_daemon.py", "private_speedups_preload.py", "suite.py"}
# Tinier than the suite's quick size where that takes tens of seconds (what each measures needs no size here):
# the daemon's CPU in one shape, one size, one tick of each sensor, a short window; the private speed-ups with one
# switched off (`--names-only` below checks every other's names); fewer prompts, sizes and repeats elsewhere.
TINY = {
    "daemon-cpu": ["bench/sensor_daemon_cpu.py", "--packets", "1", "--seconds", "2", "--shapes", "served",
                   "--ready-ticks", "1"],
    "speedups": ["bench/private_speedups.py", "--only", "job_preload", "--prompts", "2", "--repeat", "1"],
    "attempt": ["bench/attempt_overhead.py", "--repeat", "1", "--warmup", "0"],
    "dag": ["bench/dag_parallel.py", "--prompts", "2", "--delay-ms", "500"],
    "dag-daemon": ["bench/dag_parallel.py", "--daemon", "--prompts", "2", "--delay-ms", "500"],
    "limit-daemon": ["bench/rate_limit.py", "--daemon", "--repeat", "1", "--backoff-ms", "200"],
    "prompts": ["bench/prompt_overhead.py", "--sizes", "2", "4"],
    "status": ["bench/status_speed.py", "--attempts", "40", "--long", "20", "--repeat", "1", "--prompts", "5"],
}
# Scripts outside `make bench`'s table, each with a tiny size of its own.
OUTSIDE_SUITE = {
    "blame_speed.py": ["--commits", "30", "--repeat", "1", "--json"],
    "sql_profile.py": ["--size", "2", "--top", "3"],
    "attempt_phases.py": ["--repeat", "1"],
    "private_speedups.py": ["--names-only", "--json"],  # every speed-up's patched names, none run
    "git_steps.py": ["--files", "20", "--repeat", "1", "--json"],
}
# The shell scripts, each on one small test module or one round, with a line of its output that says it measured.
SMALL_TESTS = "tests/core/decisions/test_budget.py"
SHELL = {
    "fast_loop.sh": ([SMALL_TESTS], "ratio: "),
    "suite_workers.sh": ([SMALL_TESTS], "-n 4: "),
    "attempt_before_after.sh": (["HEAD", "1", "1"], "== after: "),
    "git_steps_before_after.sh": (["HEAD", "1", "1"], "after 1 {"),
}


def _suite() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_suite", BENCH / "suite.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_suite"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


suite = _suite()
BENCHES = {bench.name: bench for bench in suite.BENCHES}


def test_every_bench_script_is_run_by_the_suite_or_here() -> None:
    in_suite = {Path(bench.argv[0]).name for bench in suite.BENCHES}
    scripts = {path.name for path in BENCH.glob("*.py")} - HELPERS
    assert scripts - in_suite - set(OUTSIDE_SUITE) == set(), "add the script to bench/suite.py or OUTSIDE_SUITE"
    assert {path.name for path in BENCH.glob("*.sh")} == set(SHELL), "add the script to SHELL"
    assert {Path(argv[0]).name for argv in TINY.values()} <= scripts and set(TINY) <= set(BENCHES)


def _run(argv: list[str], env: dict[str, str]) -> str:
    done = subprocess.run([sys.executable, *argv], cwd=REPO, capture_output=True, text=True, timeout=600, env=env,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, f"{' '.join(argv)} exited {done.returncode}:\n{done.stdout[-2000:]}\n" \
                                 f"{done.stderr[-4000:]}"
    return done.stdout


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(BENCHES))
def test_each_bench_of_the_suite_runs_at_its_quick_size(name: str) -> None:
    """As `make bench ARGS=--quick` runs it (the PostgreSQL rows on make test's server when AWP_TEST_PG_URL is set)."""
    bench = BENCHES[name]
    out = _run([*TINY.get(name, bench.quick_argv), "--json"], dict(os.environ))
    rows = bench.rows(json.loads(out[out.index("{"):]))  # as suite.run_bench reads it
    assert rows, f"{name}: the quick run gave no row"


@pytest.mark.slow
@pytest.mark.parametrize("script", sorted(OUTSIDE_SUITE))
def test_each_bench_outside_the_suite_runs_at_a_tiny_size(script: str) -> None:
    assert _run([f"bench/{script}", *OUTSIDE_SUITE[script]], dict(os.environ)).strip()


@pytest.mark.slow
@pytest.mark.parametrize("script", sorted(SHELL))
def test_each_shell_bench_runs_at_a_tiny_size(script: str) -> None:
    args, says = SHELL[script]
    done = subprocess.run(["bash", f"bench/{script}", *args], cwd=REPO, capture_output=True, text=True, timeout=600,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0 and says in done.stdout + done.stderr, f"{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
