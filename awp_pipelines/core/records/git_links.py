"""Links in a git dir, found with lstat: git follows a link where it writes a file (its lock files resolve
them), so an index, a reflog or a ref the agent replaced by a link sends AWP's write anywhere on the host.
Git itself makes no links in a git dir: every link found is the agent's (or a person's) doing.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

# What `git add`, `commit`, `update-ref`, `stash` and `reset` write in a git dir (beside the branch HEAD names).
WRITE_PATHS = ("index", "HEAD", "ORIG_HEAD", "COMMIT_EDITMSG", "config", "packed-refs", "logs", "logs/HEAD",
               "logs/refs", "logs/refs/heads", "logs/refs/awp", "logs/refs/stash", "refs", "refs/heads",
               "refs/awp", "refs/stash", "objects", "objects/info", "objects/pack")
# Folders walked whole by `links_under` (small: refs, logs and metadata); `objects` only its first level.
_WALKED = ("refs", "logs", "info", "hooks", "worktrees")


def _is_link(path: Path) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(path).st_mode)
    except OSError:
        return False


def _branch_paths(git_dir: Path) -> list[str]:
    """The ref HEAD names and its reflog, each folder on the way: `refs/heads/a/b` → refs/heads/a, …/a/b."""
    try:
        head = (git_dir / "HEAD").read_text(encoding="utf-8", errors="replace")[:1024].strip()
    except OSError:
        return []
    if not head.startswith("ref: refs/"):
        return []
    parts = head.removeprefix("ref: ").split("/")
    paths = []
    for depth in range(2, len(parts) + 1):
        paths += ["/".join(parts[:depth]), "logs/" + "/".join(parts[:depth])]
    return paths


def linked_write_paths(git_dir: Path, common_dir: Path) -> list[str]:
    """The paths AWP's git writes that are links now (relative names); none in a sound repository."""
    found = []
    for base in dict.fromkeys((git_dir, common_dir)):
        for rel in (*WRITE_PATHS, *_branch_paths(git_dir)):
            if _is_link(base / rel):
                found.append(str(base / rel))
    return found


def links_under(git_dir: Path) -> list[str]:
    """Every link in a git dir: its top level, `refs/`, `logs/`, `info/`, `hooks/` and `worktrees/` whole,
    `objects/` to its first level (loose objects are git's own temp-and-rename, never a link it writes through)."""
    return sorted(str(p) for p in _walk(git_dir) if _is_link(p))


def _walk(git_dir: Path) -> Iterator[Path]:
    try:
        top = list(os.scandir(git_dir))
    except OSError:
        return
    for entry in top:
        yield Path(entry.path)
        if entry.is_symlink() or not entry.is_dir(follow_symlinks=False):
            continue
        if entry.name in _WALKED:
            for root, dirs, files in os.walk(entry.path):  # os.walk never descends into a link
                yield from (Path(root) / name for name in (*dirs, *files))
        elif entry.name == "objects":
            yield from (Path(e.path) for e in os.scandir(entry.path))
