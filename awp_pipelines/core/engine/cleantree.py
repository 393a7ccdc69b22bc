"""The clean-tree precondition: an Attempt starts on work trees that hold nothing but their HEAD, so its commit
holds only what its agent changed (and its AgentRun's own checkpoint, replayed after this check).

Before an Attempt, what each target repo holds beyond HEAD (staged, unstaged, untracked; ignored files not) is
one of two things:
- AWP's own partial work, already saved: the tree equals a checkpoint under refs/awp/checkpoints/ (an Attempt
  whose commit failed on an index.lock, or whose clean-up did not finish). It is cleaned; nothing is lost, and
  its AgentRun's next Attempt replays it from the checkpoint.
- a person's changes: refused with the files named (`dirty_tree: refuse`, the default), or set aside as a git
  stash (`dirty_tree: set_aside`) that `git stash pop` brings back.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import pygit2

from awp_pipelines.core.packet.model.manifest import DirtyTreePolicy
from awp_pipelines.core.records.workspace import (
    WorkspaceError,
    changed_paths,
    discard_changes,
    equals_a_checkpoint,
    head,
    identity,
    open_repo,
    refuse_links,
)

_SHOWN = 10  # files named in the refusal; the rest are counted


class DirtyTree(Exception):
    """A target repo holds changes no Attempt made, and the packet says to refuse (or they could not be set
    aside). The message names the repo and the files, and what to do."""

    def __init__(self, repo: str, paths: Sequence[str], detail: str = "") -> None:
        self.repo = repo
        self.paths = list(paths)
        self.detail = detail
        shown = ", ".join(self.paths[:_SHOWN]) + (f" and {len(self.paths) - _SHOWN} more"
                                                  if len(self.paths) > _SHOWN else "")
        what = f"work tree '{repo}' holds changes no Attempt made: {shown}"
        advice = detail or ("commit or stash them first, or set `dirty_tree: set_aside` in the packet manifest "
                            "to have AWP stash them before each Attempt")
        super().__init__(f"{what}; {advice}")


class CommitBlocked(DirtyTree):
    """A target repo's commit could not happen: a git lock file is there (another git process, or one that
    died). Found before the agent starts, so no session is spent on work that cannot be committed."""

    def __init__(self, repo: str, lock: Path) -> None:
        self.repo, self.paths, self.detail = repo, [], ""
        Exception.__init__(self, f"work tree '{repo}' cannot be committed: {lock} exists (a git process holds "
                           f"the index, or one died holding it); if no git command is running in that repo, delete "
                           f"it (`rm {lock}`), then repair or rerun the prompt")


def ensure_committable(targets: Mapping[str, Path]) -> None:
    """Every precondition of the Attempt's commit that can be checked before its agent starts: no index.lock.
    The work tree's lease is held, so no other Attempt's git holds it."""
    for name, repo in targets.items():
        try:
            lock = Path(open_repo(repo).path) / "index.lock"
        except WorkspaceError:
            continue  # not a repository yet: the clean-tree check and the commit say so
        if os.path.lexists(lock):
            raise CommitBlocked(name, lock)


def ensure_clean(targets: Mapping[str, Path], policy: DirtyTreePolicy, attempt: str) -> dict[str, str]:
    """Make every target repo clean before the Attempt `attempt` edits it, as `policy` says. Returns repo → the
    stash commit of what was set aside. Raises DirtyTree (nothing set aside is lost: stashes stay), CommitBlocked
    when a repo cannot be committed at all (ensure_committable)."""
    ensure_committable(targets)
    set_aside: dict[str, str] = {}
    for name, repo in targets.items():
        paths = changed_paths(repo)
        try:
            if not paths:
                continue
            if _saved_by_awp(repo):
                _clean(name, repo, paths)
            elif policy == "refuse":
                raise DirtyTree(name, paths)
            else:
                set_aside[name] = _stash(name, repo, paths, attempt)
        except DirtyTree as err:
            if not set_aside:
                raise
            done = ", ".join(f"'{r}' as stash {sha[:12]}" for r, sha in set_aside.items())
            raise DirtyTree(err.repo, err.paths, (err.detail or "commit or stash them first")
                            + f"; already set aside: {done}") from None
    return set_aside


def _saved_by_awp(repo: Path) -> bool:
    """The tree as it is equals a checkpoint AWP saved: discarding it loses nothing."""
    return equals_a_checkpoint(repo)


def _clean(name: str, repo: Path, paths: Sequence[str]) -> None:
    try:
        discard_changes(repo)
    except WorkspaceError as err:  # e.g. an index.lock still there
        raise DirtyTree(name, paths, f"it is partial work AWP saved as a checkpoint, but git could not clean "
                        f"it ({err.detail}); clean the tree (`git reset --hard && git clean -fd`)") from None


def _stash(name: str, repo: Path, paths: Sequence[str], attempt: str) -> str:
    """libgit2's `stash push --include-untracked`: staged, unstaged and untracked changes go, the tree is HEAD."""
    if head(repo) is None:
        raise DirtyTree(name, paths, "a repository without commits cannot set changes aside; commit them first")
    try:
        repository = open_repo(repo)
        refuse_links(repository, repo, "stash")
        # keep_all: libgit2 leaves the tree alone (its checkout would write through a linked folder); AWP's own
        # reset then cleans it (tree_restore.py).
        sha = str(repository.stash(identity(repository), f"AWP set aside before Attempt {attempt}",
                                   include_untracked=True, keep_all=True))
        discard_changes(repo)
    except (WorkspaceError, pygit2.GitError) as err:
        raise DirtyTree(name, paths, f"git could not set them aside ({getattr(err, 'detail', err)})") from None
    if changed_paths(repo):  # what stash leaves (a submodule's own changes): never swept into a commit
        raise DirtyTree(name, changed_paths(repo), f"they could not all be set aside (stash {sha[:12]} holds the "
                        "rest)")
    return sha
