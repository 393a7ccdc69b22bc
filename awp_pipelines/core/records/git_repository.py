"""A work tree's repository opened through libgit2 (pygit2): the library that never starts a program.

libgit2 runs no hooks, no filter, textconv, diff or merge driver, no fsmonitor, no credential helper, no pager
or editor, and starts no child `git` for a submodule or a nested repository: whatever the agent wrote into its
tree or its git dir, reading and writing the repository here executes nothing (docs/security.md, "Git the agent
cannot steer"). What is left to guard is where libgit2 reads and writes, which this module pins:

- no system, global or XDG config and no HOME: libgit2's search paths are emptied once per process, so only the
  repository's own config is read (the operator's identity is read by AWP from the global file outright);
- the repository is the one at the path AWP named, opened without searching upward; a `.git` that is a link,
  or a `commondir` inside a repository's own `.git`, is refused (`git_location`);
- before AWP writes (the index, a ref, an object), every file of the git dir it may write through is checked
  with lstat: libgit2 follows a link where it writes a file, as git does.

Ownership validation (git's `safe.directory`) is off: it guards a repository *found* by searching upward from
a folder someone else owns; AWP never searches, it opens the path it pinned, and the trees it runs on are owned
by the agent's mapped uid, which is the runner's.
"""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Sequence
from pathlib import Path

import pygit2
from pygit2.enums import ConfigLevel, RepositoryOpenFlag

from awp_pipelines.core.records.git_links import linked_write_paths


class WorkspaceError(RuntimeError):
    """A git step failed: which repo, which step, and why."""

    def __init__(self, repo: Path | str, args: Sequence[str], detail: str) -> None:
        self.repo = Path(repo)
        self.command = ["git", *args]
        self.detail = detail.strip()
        super().__init__(f"{self.repo}: {' '.join(self.command)}: {self.detail or 'failed'}")


class LinkedGitFile(WorkspaceError):
    """A file AWP would write (the index, a reflog, a ref) is a link: nothing is written through it."""


@functools.cache
def configure_library() -> None:
    """Once per process: libgit2 reads no system, global, XDG or ProgramData config and no HOME; ownership
    validation off (module docstring says why)."""
    settings = pygit2.settings
    for level in (ConfigLevel.SYSTEM, ConfigLevel.GLOBAL, ConfigLevel.XDG, ConfigLevel.PROGRAMDATA):
        settings.search_path[level] = ""
    settings.homedir = ""
    settings.owner_validation = False


def git_location(repo: Path | str) -> dict[str, str]:
    """GIT_DIR, GIT_COMMON_DIR and GIT_WORK_TREE of the work tree `repo`, read with lstat: `.git` a folder, or a
    worktree's `gitdir:` file. Empty when `repo` has no `.git` of its own. A `.git` that is a link or another
    kind of file is refused, and so is a `commondir` in a repository's own `.git` (only a worktree's git dir,
    under the main one's `worktrees/`, has one): AWP follows no link or pointer the agent can make."""
    top = Path(os.path.abspath(repo))
    dotgit = top / ".git"
    try:
        mode = os.lstat(dotgit).st_mode
    except OSError:
        return {}
    if stat.S_ISDIR(mode):
        if os.path.lexists(dotgit / "commondir"):
            raise WorkspaceError(top, ["open"], f"{dotgit / 'commondir'} points git at another repository's "
                                 "refs: AWP does not follow it; remove it")
        return {"GIT_DIR": str(dotgit), "GIT_COMMON_DIR": str(dotgit), "GIT_WORK_TREE": str(top)}
    if not stat.S_ISREG(mode):
        raise WorkspaceError(top, ["open"], f"{dotgit} is not a folder or a gitdir file (a link?): "
                             "AWP does not follow it; restore the repository's .git")
    text = dotgit.read_text(encoding="utf-8", errors="replace")[:4096].strip()
    if not text.startswith("gitdir:"):
        raise WorkspaceError(top, ["open"], f"{dotgit} names no gitdir")
    git_dir = Path(os.path.normpath(top / text.removeprefix("gitdir:").strip()))
    common = git_dir
    pointer = git_dir / "commondir"
    if pointer.is_file() and not pointer.is_symlink():
        common = Path(os.path.normpath(git_dir / pointer.read_text(encoding="utf-8").strip()))
    return {"GIT_DIR": str(git_dir), "GIT_COMMON_DIR": str(common), "GIT_WORK_TREE": str(top)}


def open_repo(tree: Path | str) -> pygit2.Repository:
    """The repository whose work tree is exactly `tree` (its `.git` checked by git_location), opened without
    searching upward. WorkspaceError when `tree` is no repository's top."""
    configure_library()
    top = Path(os.path.abspath(tree))
    if not git_location(top):
        raise WorkspaceError(top, ["open"], "not a git repository (no .git here)")
    try:
        return pygit2.Repository(str(top), RepositoryOpenFlag.NO_SEARCH)
    except (pygit2.GitError, KeyError, OSError) as err:
        raise WorkspaceError(top, ["open"], f"not a git repository: {err}") from None


def refuse_links(repo: pygit2.Repository, tree: Path | str, step: str) -> None:
    """LinkedGitFile when a file AWP's write may go through is a link (lstat, before anything is written)."""
    linked = linked_write_paths(Path(repo.path), Path(_common_dir(repo)))
    if linked:
        raise LinkedGitFile(tree, [step], f"{', '.join(linked)}: a link where git writes a file; AWP writes "
                            "nothing through it (restore the repository's git metadata)")


def _common_dir(repo: pygit2.Repository) -> str:
    pointer = Path(repo.path) / "commondir"
    if pointer.is_file() and not pointer.is_symlink():
        return os.path.normpath(Path(repo.path) / pointer.read_text(encoding="utf-8").strip())
    return repo.path
