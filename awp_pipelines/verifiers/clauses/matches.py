"""`matches`: a regular expression found in a file."""

from __future__ import annotations

import re

from ..context import VerifyContext
from ..contract import MatchesCheck
from ..paths import locate
from .outcome import Outcome, at, read_text, unlocated


def matches(entry: MatchesCheck, ctx: VerifyContext) -> Outcome:
    where = locate(entry, ctx)
    if where.resolved is None:
        return unlocated(where)
    content, problem = read_text(where.resolved)
    if content is None:
        return at(where, False, problem)
    found = re.search(entry.pattern, content) is not None
    return at(where, found, f"{'matched' if found else 'pattern not matched'}: /{entry.pattern}/")
