"""`source_absent`: no line of the source files under a path matches a forbidden pattern."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

from awp_pipelines.core.packet.model.contract import DEFAULT_PRUNE, SourceAbsentCheck

from ..context import VerifyContext
from ..file_read import Refused, read_regular
from ..paths import locate
from ..report import cap_lines
from .outcome import Outcome, at, unlocated

_MAX_FINDINGS = 40
_BINARY_SNIFF = 8192


def source_absent(entry: SourceAbsentCheck, ctx: VerifyContext) -> Outcome:
    where = locate(entry, ctx)
    if where.resolved is None:
        return unlocated(where)
    if not where.resolved.exists():
        return at(where, False, f"source path is missing: {where.resolved}")

    regexes = [re.compile(pattern) for pattern in entry.patterns]
    extensions = {ext if ext.startswith(".") else f".{ext}" for ext in entry.extensions}
    prune = set(DEFAULT_PRUNE) | set(entry.prune)
    findings: list[str] = []
    files = 0
    for file in source_files(where.resolved, extensions, prune):
        files += 1
        try:
            text = _text_of(file)
        except Refused as exc:  # over the size cap, or swapped for a FIFO: unchecked is not clean
            findings.append(f"not checked: {exc}")
            continue
        if text is None:
            continue
        rel = os.path.relpath(file, where.resolved) if where.resolved.is_dir() else where.path
        for number, line in enumerate(text.splitlines(), start=1):
            findings += [f"{rel}:{number}: /{rx.pattern}/: {line.strip()}" for rx in regexes if rx.search(line)]
    if not findings:
        return at(where, True, f"no forbidden pattern in {files} file(s)")
    summary = f"{len(findings)} forbidden match(es) in {files} file(s) checked"
    return at(where, False, summary, *cap_lines(findings, _MAX_FINDINGS))


def source_files(path: Path, extensions: set[str], prune: set[str]) -> Iterator[Path]:
    """Regular files at or below `path`, pruned and filtered; symlinks are never followed."""
    if path.is_file() and not path.is_symlink():
        yield path
        return
    for directory, dirs, names in os.walk(path):
        dirs[:] = sorted(d for d in dirs if d not in prune)
        for name in sorted(names):
            file = Path(directory, name)
            if file.is_symlink() or not file.is_file():
                continue
            if not extensions or file.suffix in extensions:
                yield file


def _text_of(file: Path) -> str | None:
    """The file as text, or None for a binary or unreadable file; Refused (file_read.py) for one it must not read."""
    try:
        data = read_regular(file)
    except OSError:
        return None
    if b"\0" in data[:_BINARY_SNIFF]:
        return None
    return data.decode("utf-8", errors="replace")
