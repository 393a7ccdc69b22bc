"""The tamper check: a work tree's git metadata before the agent's session, compared with it after, before
AWP's first git command on the tree. Git reads these files as configuration (config, hooks, info/, alternates,
commondir, the `.git` file's gitdir) or writes through them (a link anywhere in the git dir): any difference is
the Attempt's `tree_tampered` failure, naming the paths; nothing is committed, checkpointed or reset.

Inside the sandbox the agent cannot write `.git` at all (a read-only bind); with `isolation: none` this check is
what stands between the agent's session and AWP's git. Reads only, with lstat: it runs no git.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Mapping
from pathlib import Path

from awp_pipelines.core.records.git_links import links_under
from awp_pipelines.core.records.regular_files import read_regular

# Files of a git dir git reads as configuration or as where the repository is (one level; folders below).
_FILES = ("config", "config.worktree", "commondir", "gitdir", "HEAD", "shallow", "objects/info/alternates",
          "objects/info/http-alternates")
_FOLDERS = ("hooks", "info")
_CAP = 4 * 1024 * 1024

Metadata = dict[str, str]


def _describe(path: Path) -> str:
    """A file as lstat and its bytes see it: missing, a link (its text), a folder, a file (mode, content)."""
    try:
        info = os.lstat(path)
    except OSError:
        return "missing"
    if stat.S_ISLNK(info.st_mode):
        return "link " + os.readlink(path)
    if stat.S_ISDIR(info.st_mode):
        return f"folder {info.st_dev}:{info.st_ino}"
    if not stat.S_ISREG(info.st_mode):
        return f"special {stat.S_IFMT(info.st_mode):o}"
    data = read_regular(path, _CAP) or b""
    return f"file {info.st_mode & 0o111:o} {hashlib.sha256(data).hexdigest()}"


def _head(path: Path) -> str:
    """HEAD names a branch (compared) or a commit (a detached HEAD moves with every commit: its kind only)."""
    described = _describe(path)
    if not described.startswith("file "):
        return described
    text = (read_regular(path, 1024) or b"").decode("utf-8", "replace").strip()
    return text if text.startswith("ref: ") else "file detached"


def git_dirs(tree: Path) -> list[Path]:
    """The git dir of `tree` and its common dir, as the `.git` entry names them now (read, never trusted)."""
    dotgit = tree / ".git"
    if dotgit.is_symlink() or not dotgit.exists():
        return []
    if dotgit.is_dir():
        return [dotgit]
    text = (read_regular(dotgit, 4096) or b"").decode("utf-8", "replace").strip()
    if not text.startswith("gitdir:"):
        return []
    git_dir = Path(os.path.normpath(tree / text.removeprefix("gitdir:").strip()))
    pointer = read_regular(git_dir / "commondir", 4096)
    common = Path(os.path.normpath(git_dir / pointer.decode("utf-8", "replace").strip())) if pointer else git_dir
    return list(dict.fromkeys((git_dir, common)))


def git_metadata(tree: Path | str) -> Metadata:
    """What git will read of `tree`'s git metadata, path → description."""
    top = Path(os.path.abspath(tree))
    found: Metadata = {str(top / ".git"): _describe(top / ".git")}
    for git_dir in git_dirs(top):
        for name in _FILES:
            place = git_dir / name
            found[str(place)] = _head(place) if name == "HEAD" else _describe(place)
        for folder in _FOLDERS:
            found[str(git_dir / folder)] = _describe(git_dir / folder)
            for root, dirs, files in os.walk(git_dir / folder):  # never into a link
                for name in (*dirs, *files):
                    found[str(Path(root) / name)] = _describe(Path(root) / name)
        for link in links_under(git_dir):
            found[link] = _describe(Path(link))
    return found


def tampered(before: Mapping[str, Metadata], after: Mapping[str, Metadata]) -> dict[str, list[str]]:
    """Per repo, the paths whose description differs between two readings (added, removed or changed)."""
    changed = {}
    for name, was in before.items():
        now = after.get(name, {})
        paths = sorted(p for p in was.keys() | now.keys() if was.get(p) != now.get(p))
        if paths:
            changed[name] = paths
    return changed


def read_metadata(trees: Mapping[str, Path]) -> dict[str, Metadata]:
    return {name: git_metadata(tree) for name, tree in trees.items()}


def tamper_message(changed: Mapping[str, list[str]], limit: int = 20) -> str:
    """One line per repo: the paths, capped; what a person does next."""
    parts = []
    for name, paths in changed.items():
        shown = ", ".join(paths[:limit]) + (f" and {len(paths) - limit} more" if len(paths) > limit else "")
        parts.append(f"{name}: {shown}")
    return ("the agent's session changed the work tree's git metadata, which AWP's git would read as "
            "configuration or write through (" + "; ".join(parts) + "): nothing was committed, checkpointed or "
            "reset; inspect and restore the git dir (e.g. from a clone) before running again")
