"""`glob`: the number of files a pattern matches, and optionally that each is a non-empty file."""

from __future__ import annotations

import glob as globmod
import os

from ..context import VerifyContext
from ..contract import GlobCheck
from ..paths import is_within, locate
from ..report import cap_lines
from .outcome import Outcome, at, unlocated

_MAX_LISTED = 40


def glob_count(entry: GlobCheck, ctx: VerifyContext) -> Outcome:
    # The pattern is checked like a path (no absolute, no '..' out); symlinks are judged per match below.
    where = locate(entry, ctx, follow_symlinks=False)
    if where.resolved is None:
        return unlocated(where)
    root = ctx.roots()[where.repo].absolute()
    matches = sorted(globmod.glob(os.path.normpath(where.path), root_dir=root, recursive=True))

    problems: list[str] = []
    outside = [m for m in matches if not is_within(root / m, root)]
    if outside:
        problems.append(f"matches escaping the repo through a symlink: {', '.join(outside)}")
    if len(matches) < entry.min_matches:
        problems.append(f"{len(matches)} match(es), fewer than min_matches {entry.min_matches}")
    if entry.max_matches is not None and len(matches) > entry.max_matches:
        problems.append(f"{len(matches)} match(es), more than max_matches {entry.max_matches}")
    if entry.non_empty:
        empty = [m for m in matches if not _non_empty_file(root / m)]
        if empty:
            problems.append(f"empty or not a regular file: {', '.join(empty)}")
    listed = cap_lines([f"  {m}" for m in matches], _MAX_LISTED)
    return at(where, not problems, *problems, f"{len(matches)} match(es)", *listed)


def _non_empty_file(path: os.PathLike[str]) -> bool:
    return os.path.isfile(path) and os.path.getsize(path) > 0
