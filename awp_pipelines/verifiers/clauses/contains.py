"""`contains`: a literal text in a file."""

from __future__ import annotations

from ..context import VerifyContext
from ..contract import ContainsCheck
from ..paths import locate
from .outcome import Outcome, at, read_text, unlocated


def contains(entry: ContainsCheck, ctx: VerifyContext) -> Outcome:
    where = locate(entry, ctx)
    if where.resolved is None:
        return unlocated(where)
    content, problem = read_text(where.resolved)
    if content is None:
        return at(where, False, problem)
    found = entry.text in content
    return at(where, found, f"{'found' if found else 'text not found'}: {entry.text!r}")
