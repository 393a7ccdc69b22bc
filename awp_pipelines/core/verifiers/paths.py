"""Contract entries -> (repo, path) -> a checked absolute path that cannot leave its repository."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from awp_pipelines.core.packet.model.contract import Entry, RepoPath

from .context import VerifyContext

# What `repo:path` may use as a repo name when read without a context (item names, checklist labels).
_REPO_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


@dataclass(frozen=True)
class Located:
    """An entry resolved in a context; `error` says why it has no usable path."""

    repo: str
    path: str
    resolved: Path | None
    error: str | None = None


def display(entry: Entry) -> str:
    """The entry as Prompt Runner prints it: `path`, or `repo:path` when the repo is explicit."""
    if isinstance(entry, str):
        return entry
    return f"{entry.repo}:{entry.path}" if entry.repo else entry.path


def written_repo_path(entry: Entry) -> tuple[str | None, str]:
    """(repo, path) as written, without a context: a `name:` prefix counts when it looks like a repo name."""
    if isinstance(entry, RepoPath):
        return entry.repo, entry.path
    head, sep, tail = entry.partition(":")
    if sep and tail and _REPO_NAME.match(head):
        return head, tail
    return None, entry


def entry_repo_path(entry: Entry, ctx: VerifyContext) -> tuple[str | None, str]:
    """(repo, path) in a context: `x:rest` names repo x only when x is known; otherwise ':' is in the name."""
    if isinstance(entry, RepoPath):
        return entry.repo, entry.path
    head, sep, tail = entry.partition(":")
    if sep and tail and head in ctx.roots():
        return head, tail
    return None, entry


def locate(entry: Entry, ctx: VerifyContext, *, follow_symlinks: bool = True) -> Located:
    repo, path = entry_repo_path(entry, ctx)
    return locate_path(repo, path, ctx, entry=display(entry), follow_symlinks=follow_symlinks)


def locate_path(
    repo: str | None,
    path: str,
    ctx: VerifyContext,
    *,
    entry: str | None = None,
    follow_symlinks: bool = True,
) -> Located:
    """Resolve `path` inside `repo` (default repo when None). Escapes are errors that name the entry."""
    name = repo or ctx.default_name()
    entry = entry if entry is not None else path
    roots = ctx.roots()
    if name not in roots:
        known = ", ".join(sorted(roots))
        return Located(name, path, None, f"entry {entry!r} names unknown repo {name!r} (known: {known})")
    root = roots[name]
    if not path.strip():
        return Located(name, path, None, f"entry {entry!r} has an empty path")
    if os.path.isabs(path):
        return Located(name, path, None, f"entry {entry!r} is an absolute path; paths are relative to {name!r}")
    normal = os.path.normpath(path)
    if normal == os.pardir or normal.startswith(os.pardir + os.sep):
        return Located(name, path, None, f"entry {entry!r} escapes repo {name!r} through '..'")
    resolved = root.absolute() / normal
    if follow_symlinks and not is_within(resolved, root):
        target = os.path.realpath(resolved)
        return Located(
            name, path, None, f"entry {entry!r} escapes repo {name!r} through a symlink (resolves to {target})"
        )
    return Located(name, path, resolved)


def is_within(path: Path | str, root: Path | str) -> bool:
    """True when `path`, with every symlink resolved, is `root` or below it."""
    real, real_root = os.path.realpath(path), os.path.realpath(root)
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)
