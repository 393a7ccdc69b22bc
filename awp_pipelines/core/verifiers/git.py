"""The few read-only git queries the repository clauses need, over the workspace's one git runner."""

from __future__ import annotations

from pathlib import Path

from awp_pipelines.core.records.workspace import WorkspaceError, changed_paths, git, git_env

from .process import Finished, run_bounded

_GIT_TIMEOUT_S = 60


class GitError(Exception):
    """A git query failed; the message says which and why."""


def value(root: Path, *args: str) -> str | None:
    """A one-line git answer, or None when git has none (no upstream, no commit yet)."""
    try:
        return git(root, *args, read_only=True, timeout_s=_GIT_TIMEOUT_S).stdout.strip() or None
    except WorkspaceError:
        return None


def require_worktree(root: Path) -> None:
    if not root.is_dir():
        raise GitError(f"repository folder is missing: {root}")
    if value(root, "rev-parse", "--is-inside-work-tree") != "true":
        raise GitError(f"not a git repository: {root}")


def worktree_changes(root: Path) -> list[str]:
    """`workspace.changed_paths` of a repository that must exist, read without taking a lock; GitError
    says why not."""
    require_worktree(root)
    try:
        return changed_paths(root, read_only=True, timeout_s=_GIT_TIMEOUT_S)
    except WorkspaceError as exc:
        raise GitError(str(exc)) from exc


def ls_remote(root: Path, remote: str, ref: str, timeout_ms: int) -> Finished:
    """`git ls-remote --exit-code` (read-only: unlike fetch it moves no ref), bounded."""
    # A network command: the operator's credential helper stays (workspace.git does the same for its own).
    return run_bounded(["git", "ls-remote", "--exit-code", remote, ref], root,
                       git_env(read_only=True, operator_config=True), timeout_ms)
