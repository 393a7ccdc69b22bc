"""The few read-only git queries the repository clauses need, run as subprocesses."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from .process import Finished, run_bounded

_GIT_TIMEOUT_S = 60


class GitError(Exception):
    """A git query failed; the message says which and why."""


def git_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE")}
    # Never prompt for credentials, never take optional locks (a verifier must not write to its subject).
    env.update(GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0", LC_ALL="C")
    return env


def git(root: Path, *args: str) -> str:
    """stdout of `git args` in `root`; GitError when it fails."""
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=root,
            env=git_env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=_GIT_TIMEOUT_S,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitError(f"git {' '.join(args)} could not run in {root}: {exc}") from exc
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", errors="replace").strip()
        raise GitError(f"git {' '.join(args)} failed in {root}: {message}")
    return done.stdout.decode("utf-8", errors="replace")


def value(root: Path, *args: str) -> str | None:
    """A one-line git answer, or None when git has none (no upstream, no commit yet)."""
    try:
        return git(root, *args).strip() or None
    except GitError:
        return None


def require_worktree(root: Path) -> None:
    if not root.is_dir():
        raise GitError(f"repository folder is missing: {root}")
    if value(root, "rev-parse", "--is-inside-work-tree") != "true":
        raise GitError(f"not a git repository: {root}")


def changed_paths(root: Path) -> list[str]:
    """Every path that differs from HEAD: staged, unstaged, deleted, both sides of a rename, untracked."""
    require_worktree(root)
    fields = git(root, "status", "--porcelain", "-z", "--untracked-files=all").split("\0")
    paths: list[str] = []
    index = 0
    while index < len(fields):
        record = fields[index]
        index += 1
        if len(record) < 4:
            continue
        status, path = record[:2], record[3:]
        paths.append(path)
        if "R" in status or "C" in status:  # -z puts the rename/copy source in the next field
            if "R" in status and index < len(fields):
                paths.append(fields[index])
            index += 1
    return sorted(dict.fromkeys(paths))


def ls_remote(root: Path, remote: str, ref: str, timeout_ms: int) -> Finished:
    """`git ls-remote --exit-code` (read-only: unlike fetch it moves no ref), bounded."""
    return run_bounded(["git", "ls-remote", "--exit-code", remote, ref], root, git_env(), timeout_ms)
