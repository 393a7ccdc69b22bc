"""The value every clause returns, and the few helpers the file-reading clauses share."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from awp_pipelines.core.packet.model.contract import Entry

from ..context import VerifyContext
from ..file_read import Refused, read_regular
from ..paths import Located, locate
from ..report import Fault


@dataclass(frozen=True)
class Outcome:
    passed: bool
    details: list[str] = field(default_factory=list)
    repo: str | None = None
    path: str | None = None
    resolved_path: str | None = None
    fault: Fault | None = None
    command: str | None = None
    cwd: str | None = None
    exit_code: int | None = None


def at(where: Located, passed: bool, *details: str) -> Outcome:
    """An outcome about the located path `where`."""
    resolved = str(where.resolved) if where.resolved is not None else None
    return Outcome(passed, list(details), repo=where.repo, path=where.path, resolved_path=resolved)


def unlocated(where: Located) -> Outcome:
    """The entry could not be resolved (unknown repo, escape): a failure that names the entry."""
    return at(where, False, where.error or "entry could not be resolved")


def read_text(path: Path) -> tuple[str | None, str]:
    """(content, "") or (None, why): a missing, unreadable or refused file (not a regular file, over the size
    cap: file_read.py) is a failed item, never an exception and never a blocked read."""
    try:
        return read_regular(path).decode("utf-8", errors="replace"), ""
    except FileNotFoundError:
        return None, f"missing file: {path}"
    except Refused as exc:
        return None, str(exc)
    except OSError as exc:
        return None, f"unreadable file ({exc.strerror or exc}): {path}"


@dataclass(frozen=True)
class Opened:
    where: Located
    text: str


def open_text(entry: Entry, ctx: VerifyContext) -> Opened | Outcome:
    """The entry's file as text, or the failed Outcome that says why not (unresolvable, missing, unreadable)."""
    where = locate(entry, ctx)
    if where.resolved is None:
        return unlocated(where)
    content, problem = read_text(where.resolved)
    if content is None:
        return at(where, False, problem)
    return Opened(where, content)


@dataclass(frozen=True)
class Parsed:
    where: Located
    value: Any


def open_parsed(entry: Entry, ctx: VerifyContext, parse: Callable[[str], Any], errors: type[Exception],
                language: str) -> Parsed | Outcome:
    """The entry's file parsed (JSON, YAML), or the failed Outcome that says why not: `language parse failed`
    with the parser's message on one line."""
    opened = open_text(entry, ctx)
    if isinstance(opened, Outcome):
        return opened
    try:
        return Parsed(opened.where, parse(opened.text))
    except errors as exc:
        return at(opened.where, False, f"{language} parse failed: {' '.join(str(exc).split())}")
