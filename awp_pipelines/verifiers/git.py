"""The few read-only git queries the repository clauses need, run as subprocesses."""

from __future__ import annotations

import subprocess
from pathlib import Path

from ..workspace import git_env as workspace_git_env
from ..workspace import parse_status_z
from .process import Finished, run_bounded

_GIT_TIMEOUT_S = 60


class GitError(Exception):
    """A git query failed; the message says which and why."""


def git_env() -> dict[str, str]:
    # No optional locks: `git status` would otherwise refresh the index, and a verifier must not write to
    # the repository it judges (nor race the agent for index.lock).
    return {**workspace_git_env(), "GIT_OPTIONAL_LOCKS": "0"}


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
    return parse_status_z(git(root, "status", "--porcelain=v1", "-z", "--untracked-files=all"))


def ls_remote(root: Path, remote: str, ref: str, timeout_ms: int) -> Finished:
    """`git ls-remote --exit-code` (read-only: unlike fetch it moves no ref), bounded."""
    return run_bounded(["git", "ls-remote", "--exit-code", remote, ref], root, git_env(), timeout_ms)
