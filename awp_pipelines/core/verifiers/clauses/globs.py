"""`glob`: the number of files a pattern matches, and optionally that each is a non-empty file.

The walk is our own, not `glob.glob`: that follows symlinked directories, so `link_etc/*` listed /etc and a
`ln -s / rootlink` or a symlink loop made `**/*.x` run forever (an agent can create such links itself).
Here a symlink may be matched as an entry, but a symlinked directory is never entered, and the walk stops
after MAX_ENTRIES directory entries or MAX_SECONDS, whichever comes first: a fault, never a hang.
"""

from __future__ import annotations

import fnmatch
import glob as globmod
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from awp_pipelines.core.packet.model.contract import GlobCheck

from ..context import VerifyContext
from ..paths import is_within, locate
from ..report import cap_lines
from .outcome import Outcome, at, unlocated

_MAX_LISTED = 40
MAX_ENTRIES = 200_000
MAX_SECONDS = 10.0


class GlobBoundExceeded(Exception):
    """The walk hit its entry or time bound; the item could not be checked."""


@dataclass
class BoundedGlob:
    """Matches of one pattern below `root`, as relative paths, without leaving `root` through a symlink."""

    root: str
    max_entries: int = MAX_ENTRIES
    max_seconds: float = MAX_SECONDS
    entries: int = 0
    not_followed: set[str] = field(default_factory=set)
    _deadline: float = 0.0

    def matches(self, pattern: str) -> list[str]:
        self._deadline = time.monotonic() + self.max_seconds
        parts = [p for p in os.path.normpath(pattern).split(os.sep) if p not in ("", ".")]
        return sorted(set(self._match("", parts)))

    def _match(self, rel: str, parts: list[str]) -> Iterator[str]:
        if not parts:
            if rel:
                yield rel
            return
        head, rest = parts[0], parts[1:]
        if head == "**":
            # zero directories, then one more level with `**` still to match
            yield from self._match(rel, rest) if rest else ([rel] if rel else [])
            for name, kind in self._list(rel):
                if _hidden(name, head):
                    continue
                child = os.path.join(rel, name)
                if not rest:
                    yield child
                if self._enters(kind, child):
                    yield from self._match(child, parts)
            return
        if globmod.has_magic(head):
            for name, kind in self._list(rel):
                if _hidden(name, head) or not fnmatch.fnmatchcase(name, head):
                    continue
                child = os.path.join(rel, name)
                if not rest:
                    yield child
                elif self._enters(kind, child):
                    yield from self._match(child, rest)
            return
        child = os.path.join(rel, head)
        full = os.path.join(self.root, child)
        if not rest:
            if os.path.lexists(full):
                yield child
        elif self._enters(_kind(full), child):
            yield from self._match(child, rest)

    def _enters(self, kind: str, rel: str) -> bool:
        """Only real directories are entered; a symlink is noted, never followed (its target is not even
        stat'ed: it may be outside the repo)."""
        if kind == "link":
            self.not_followed.add(rel)
        return kind == "dir"

    def _list(self, rel: str) -> Iterator[tuple[str, str]]:
        """(name, kind: dir, link or other) per entry of `rel`, counted against the bounds."""
        try:
            with os.scandir(os.path.join(self.root, rel)) as listing:
                for entry in listing:
                    self.entries += 1
                    if self.entries > self.max_entries:
                        raise GlobBoundExceeded(f"more than {self.max_entries} directory entries visited")
                    if time.monotonic() > self._deadline:
                        raise GlobBoundExceeded(f"walk took longer than {self.max_seconds:g} s")
                    kind = "link" if entry.is_symlink() else "dir" if entry.is_dir() else "other"
                    yield entry.name, kind
        except (NotADirectoryError, FileNotFoundError, PermissionError):
            return


def _hidden(name: str, pattern: str) -> bool:
    """As glob: `*`, `?` and `**` do not match names starting with a dot unless the pattern does."""
    return name.startswith(".") and not pattern.startswith(".")


def _kind(path: str) -> str:
    return "link" if os.path.islink(path) else "dir" if os.path.isdir(path) else "other"


def glob_count(entry: GlobCheck, ctx: VerifyContext) -> Outcome:
    # The pattern is checked like a path (no absolute, no '..' out); symlinks are judged per match below.
    where = locate(entry, ctx, follow_symlinks=False)
    if where.resolved is None:
        return unlocated(where)
    root = ctx.roots()[where.repo].absolute()
    walker = BoundedGlob(str(root), max_entries=MAX_ENTRIES, max_seconds=MAX_SECONDS)
    try:
        matches = walker.matches(where.path)
    except GlobBoundExceeded as exc:
        outcome = at(where, False, f"glob could not finish: {exc}", "narrow the pattern")
        return Outcome(**{**outcome.__dict__, "fault": "verifier_fault"})

    problems: list[str] = []
    outside = [m for m in matches if not is_within(root / m, root)]
    if outside:
        problems.append(f"matches escaping the repo through a symlink: {', '.join(outside)}")
    if len(matches) < entry.min_matches:
        problems.append(f"{len(matches)} match(es), fewer than min_matches {entry.min_matches}")
    if entry.max_matches is not None and len(matches) > entry.max_matches:
        problems.append(f"{len(matches)} match(es), more than max_matches {entry.max_matches}")
    if entry.non_empty:
        # An escaping match is already a problem; it is not even stat'ed.
        empty = [m for m in matches if m not in outside and not _non_empty_file(root / m)]
        if empty:
            problems.append(f"empty or not a regular file: {', '.join(empty)}")
    listed = cap_lines([f"  {m}" for m in matches], _MAX_LISTED)
    skipped = sorted(walker.not_followed)
    if skipped:
        listed.append("symlinks not followed: " + ", ".join(cap_lines(skipped, 5)))
    return at(where, not problems, *problems, f"{len(matches)} match(es)", *listed)


def _non_empty_file(path: os.PathLike[str]) -> bool:
    return os.path.isfile(path) and os.path.getsize(path) > 0
