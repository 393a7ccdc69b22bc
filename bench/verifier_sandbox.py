"""The cost of the verifier's sandbox: one contract command checked the way an Attempt checks it
(`run_contract`, its `commands` clause), bare (`isolation: none`) and in the verifier's sandbox (bwrap: the
tree read-write, the packet read-only, the runner's Python read-only, no network), alternately in one run.
Goal: at most 100 ms more than bare per command.

    .venv/bin/python bench/verifier_sandbox.py [--repeat 15] [--json]

The commands: `python -c pass`, and `python -m pytest -q` on a tree holding one passing test (the honest
contract of issue 31). Medians of --repeat, after one warm-up of each."""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Literal

sys.path.insert(0, str(Path(__file__).resolve().parent))
from emit import emit  # noqa: E402
from sandbox_start import sandbox_bench_args  # noqa: E402

from awp_pipelines.core.verifiers import VerifyContext, VerifyContract, run_contract  # noqa: E402

GOAL_MS = 100.0
COMMANDS = {
    "`python -c pass`": {"exec": sys.executable, "args": ["-c", "pass"]},
    "`python -m pytest -q` (one test)": {"exec": sys.executable,
                                         "args": ["-m", "pytest", "-q", "-p", "no:cacheprovider"],
                                         "stdout_contains": "1 passed"},
}


def _check(contract: VerifyContract, tree: Path, isolation: Literal["sandbox", "none"]) -> float:
    start = time.perf_counter()
    report = run_contract(contract, VerifyContext(tree.parent, {"app": tree}, "app", isolation=isolation))
    elapsed = (time.perf_counter() - start) * 1000
    if not report.passed:
        raise SystemExit(f"the check failed ({isolation}): {report.unmet_text()}")
    return elapsed


def measure(name: str, command: dict[str, object], tree: Path, repeat: int) -> dict[str, object]:
    contract = VerifyContract.model_validate({"commands": [command]})
    _check(contract, tree, "none"), _check(contract, tree, "sandbox")  # warm-up
    bare, boxed = [], []
    for _ in range(repeat):
        bare.append(_check(contract, tree, "none"))
        boxed.append(_check(contract, tree, "sandbox"))
    bare_ms, boxed_ms = statistics.median(bare), statistics.median(boxed)
    extra = boxed_ms - bare_ms
    return {"command": name, "bare_ms": round(bare_ms, 1), "sandboxed_ms": round(boxed_ms, 1),
            "extra_ms": round(extra, 1), "ratio": round(boxed_ms / bare_ms, 2), "met": extra <= GOAL_MS}


def main(argv: list[str] | None = None) -> int:
    args = sandbox_bench_args(__doc__, argv)
    if args is None:
        return 1
    with tempfile.TemporaryDirectory(prefix="awp-bench-verifier-") as folder:
        tree = Path(folder) / "tree"
        tree.mkdir()
        (tree / "calc.py").write_text("def add(a, b):\n    return a + b\n")
        (tree / "test_calc.py").write_text("from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n")
        rows = [measure(name, command, tree, args.repeat) for name, command in COMMANDS.items()]
    text = "\n".join(f"{r['command']}: bare {r['bare_ms']} ms, in the verifier's sandbox {r['sandboxed_ms']} ms "
                     f"({r['extra_ms']:+} ms, {r['ratio']}x; goal <= +{GOAL_MS:g} ms)" for r in rows)
    return emit({"rows": rows, "repeat": args.repeat, "goal_ms": GOAL_MS}, args.json, text)


if __name__ == "__main__":
    sys.exit(main())
