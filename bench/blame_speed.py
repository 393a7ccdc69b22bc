"""How long `awp blame FILE:LINE` takes on a repo with 1,000 AWP commits, against plain `git blame -L`.

    .venv/bin/python bench/blame_speed.py [--commits N] [--repeat N] [--json]

The repo is built through libgit2 in a temporary folder: every commit appends one line to ARTIFACT.md and
carries the AWP trailers and seal `attempts._commit` writes. Two lines are asked about: the newest
(line N, written by the last commit) and the oldest (line 1, which git has to follow back through every
commit). Each answer is timed three ways, the median of --repeat runs:

  git       `git blame --porcelain -L n,n` on the same line (the floor: what git alone costs)
  core      `awp_pipelines.cli_features.blame.blame()` in this process (libgit2's blame, the trailers and seals)
  cli       the `awp blame FILE:LINE --json` command as a user runs it (Python start-up and imports included)

Only the ratios in one run mean anything on a shared machine; the goal is `cli` under 1 s.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
AWP = Path(sys.executable).parent / "awp"


def build_repo(root: Path, commits: int) -> Path:
    """A repo of `commits` commits as AWP makes them (trailers and AWP's seal), each appending line i to
    ARTIFACT.md, written object by object through libgit2."""
    import pygit2

    from awp_pipelines.core.records.commit_seal import SEAL_TRAILER, seal, seal_key

    repo = pygit2.init_repository(str(root), initial_head="main")
    key = seal_key()
    assert key is not None
    content, parents = "", []
    for i in range(1, commits + 1):
        content += f"line {i}: written by attempt r1.{i:04d}.a1\n"
        builder = repo.TreeBuilder()
        builder.insert("ARTIFACT.md", repo.create_blob(content.encode()), pygit2.enums.FileMode.BLOB)
        tree = builder.write()
        attempt = f"r1.{i:04d}.a1"
        message = (f"docs: step {i}\n\nAWP-Packet: bench\nAWP-Prompt: {i:04d}\nAWP-Agent-Run: r1.{i:04d}\n"
                   f"AWP-Attempt: {attempt}\nAWP-Mode: run\nAWP-Reason: primary target of the plan\n"
                   f"AWP-Provider: simulated\nAWP-Account: none\nAWP-Model: simulated-demo\n"
                   f"AWP-Dagster-Run: 00000000-0000-4000-8000-{i:012d}\n"
                   f"{SEAL_TRAILER}: {seal(key, attempt, str(tree), [str(p) for p in parents])}\n")
        who = pygit2.Signature("AWP Bench", "bench@awp.invalid", 1_700_000_000 + i, 0)
        parents = [repo.create_commit("refs/heads/main", who, who, message, tree, parents)]
    subprocess.run(["git", "-C", str(root), "checkout", "--quiet", "main"], check=True)
    return root / "ARTIFACT.md"


def timed(action: Callable[[], object], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def measure(file: Path, line: int, repeat: int, expect_attempt: str) -> dict[str, float]:
    from awp_pipelines.cli_features.blame import blame

    def git_blame() -> None:
        subprocess.run(["git", "-C", str(file.parent), "blame", "--porcelain", "-L", f"{line},{line}", "--",
                        file.name], check=True, capture_output=True)

    def core() -> None:
        [entry] = blame(file, line)
        assert entry.awp.attempt == expect_attempt, entry

    def cli() -> None:
        out = subprocess.run([str(AWP), "blame", f"{file}:{line}", "--json"], check=True, capture_output=True,
                             text=True).stdout
        assert json.loads(out)["lines"][0]["awp"]["attempt"] == expect_attempt

    for action in (git_blame, core, cli):  # warm-up: page cache, first imports
        action()
    return {"git": timed(git_blame, repeat), "core": timed(core, repeat), "cli": timed(cli, repeat)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--commits", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="awp-blame-bench-") as tmp:
        start = time.perf_counter()
        file = build_repo(Path(tmp) / "repo", args.commits)
        built = time.perf_counter() - start
        rows = {
            "newest": measure(file, args.commits, args.repeat, f"r1.{args.commits:04d}.a1"),
            "oldest": measure(file, 1, args.repeat, "r1.0001.a1"),
        }
    if args.json:
        print(json.dumps({"commits": args.commits, "repeat": args.repeat, "build_s": built, "rows": rows}, indent=2))
        return
    print(f"repo: {args.commits} trailered commits (built in {built:.1f} s); median of {args.repeat} runs")
    print(f"{'line':8} {'git ms':>8} {'core ms':>8} {'cli ms':>8} {'core/git':>9} {'cli/git':>8}  goal cli < 1000 ms")
    for name, r in rows.items():
        verdict = "ok" if r["cli"] < 1.0 else "SLOW"
        print(f"{name:8} {r['git'] * 1e3:8.1f} {r['core'] * 1e3:8.1f} {r['cli'] * 1e3:8.1f} "
              f"{r['core'] / r['git']:9.2f} {r['cli'] / r['git']:8.2f}  {verdict}")


if __name__ == "__main__":
    main()
