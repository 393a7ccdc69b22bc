"""AWP's git steps after an agent's session, on a real repository: what an Attempt pays for git alone.

    PYTHONPATH=<a checkout> .venv/bin/python bench/git_steps.py [--files N] [--repeat N] [--json]

One step set per repetition, on a fresh copy of a repository of `--files` tracked files (default 500, a few
KiB each) where the "agent" changed 10 files and added 5: the snapshot before the session, the snapshot after
it, the commit, and for an Attempt that did not complete the checkpoint plus the reset instead (the two paths an
Attempt ends by). Medians in ms. The functions are called by their names in `core/records/workspace.py` and
`committer.py`, so the same script measures any checkout (`bench/git_steps_before_after.sh` runs main's and
this tree's, alternating, in one command).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def build(root: Path, files: int) -> Path:
    repo = root / "template"
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "--initial-branch=main")
    _git(repo, "config", "user.name", "bench")
    _git(repo, "config", "user.email", "bench@awp.invalid")
    for i in range(files):
        folder = repo / f"pkg{i % 20}"
        folder.mkdir(exist_ok=True)
        (folder / f"mod{i}.py").write_text(f"# module {i}\n" + "x = 1\n" * 200)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    return repo


def agent(repo: Path) -> None:
    for i in range(10):
        with (repo / f"pkg{i % 20}" / f"mod{i}.py").open("a") as out:
            out.write("y = 2\n")
    for i in range(5):
        (repo / f"new{i}.py").write_text("z = 3\n" * 50)


def one(template: Path, root: Path, completed: bool) -> dict[str, float]:
    from awp_pipelines.core.records.committer import commit_targets
    from awp_pipelines.core.records.workspace import discard_changes, save_checkpoint, snapshot

    repo = root / "work"
    shutil.rmtree(repo, ignore_errors=True)
    shutil.copytree(template, repo, symlinks=True)
    times: dict[str, float] = {}
    start = time.perf_counter()
    before = snapshot({"app": repo})
    times["snapshot before"] = time.perf_counter() - start
    agent(repo)
    start = time.perf_counter()
    snapshot({"app": repo})
    times["snapshot after"] = time.perf_counter() - start
    start = time.perf_counter()
    if completed:
        commit_targets({"app": repo}, "feat: work", {"AWP-Attempt": "b.01.a1"})
        times["commit"] = time.perf_counter() - start
    else:
        save_checkpoint(repo, before["app"].head, "refs/awp/checkpoints/b.01/b.01.a1", "cp", ["not-in-the-work"])
        discard_changes(repo)
        times["checkpoint + reset"] = time.perf_counter() - start
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    samples: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="awp-git-steps-") as tmp:
        template = build(Path(tmp), args.files)
        for _ in range(args.repeat):
            for completed in (True, False):
                for step, seconds in one(template, Path(tmp), completed).items():
                    samples.setdefault(step, []).append(seconds * 1000)
    medians = {step: round(statistics.median(values), 1) for step, values in samples.items()}
    medians["an Attempt that completes"] = round(sum(medians[s] for s in ("snapshot before", "snapshot after",
                                                                          "commit")), 1)
    medians["an Attempt that does not"] = round(sum(medians[s] for s in ("snapshot before", "snapshot after",
                                                                         "checkpoint + reset")), 1)
    if args.json:
        print(json.dumps(medians))
    else:
        for step, value in medians.items():
            print(f"{step:28s} {value:8.1f} ms")


if __name__ == "__main__":
    main()
