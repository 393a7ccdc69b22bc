"""The few read-only git queries the repository clauses need: through libgit2 (workspace.py), which runs no
program and takes no lock; only `ls-remote` asks the network, through git."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pygit2

from awp_pipelines.core.records.workspace import WorkspaceError, changed_paths, network_env, open_repo

from .process import Finished, run_bounded


class GitError(Exception):
    """A git query failed; the message says which and why."""


@dataclass(frozen=True)
class Upstream:
    """A branch's upstream as its config names it: `origin/main`, the remote, the ref there, the cached sha."""

    name: str
    remote: str
    ref: str
    cached: str | None


def _open(root: Path) -> pygit2.Repository:
    if not root.is_dir():
        raise GitError(f"repository folder is missing: {root}")
    try:
        return open_repo(root)
    except WorkspaceError:
        raise GitError(f"not a git repository: {root}") from None


def require_worktree(root: Path) -> None:
    if _open(root).is_bare:
        raise GitError(f"not a git repository: {root}")


def worktree_changes(root: Path) -> list[str]:
    """`workspace.changed_paths` of a repository that must exist; GitError says why not."""
    require_worktree(root)
    try:
        return changed_paths(root)
    except WorkspaceError as exc:
        raise GitError(str(exc)) from exc


def head_of(root: Path) -> tuple[str | None, str | None]:
    """(the branch HEAD names, or None when detached; HEAD's commit, or None before the first)."""
    repository = _open(root)
    branch = None if repository.head_is_detached else str(repository.references["HEAD"].target).removeprefix(
        "refs/heads/")
    return branch, None if repository.head_is_unborn else str(repository.head.target)


def upstream_of(root: Path, branch: str) -> Upstream | None:
    """`branch.<name>.remote` and `.merge` of the repository's config, and the remote-tracking ref's sha."""
    repository = _open(root)
    try:
        config = repository.config
        remote, ref = str(config[f"branch.{branch}.remote"]), str(config[f"branch.{branch}.merge"])
    except KeyError:
        return None
    name = f"{remote}/{ref.removeprefix('refs/heads/')}"
    try:
        cached: str | None = str(repository.references[f"refs/remotes/{name}"].resolve().target)
    except KeyError:
        cached = None
    return Upstream(name, remote, ref, cached)


def ls_remote(root: Path, remote: str, ref: str, timeout_ms: int) -> Finished:
    """`git ls-remote --exit-code` (read-only: unlike fetch it moves no ref), bounded; the network command's
    allow-listed environment (the operator's credential helper stays)."""
    return run_bounded(["git", "-c", "core.hooksPath=/dev/null", "ls-remote", "--exit-code", remote, ref], root,
                       network_env(), timeout_ms)
