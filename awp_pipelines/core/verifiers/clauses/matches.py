"""`matches`: a regular expression found in a file."""

from __future__ import annotations

import re

from awp_pipelines.core.packet.model.contract import MatchesCheck

from ..context import VerifyContext
from .outcome import Outcome, at, open_text


def matches(entry: MatchesCheck, ctx: VerifyContext) -> Outcome:
    opened = open_text(entry, ctx)
    if isinstance(opened, Outcome):
        return opened
    where, content = opened.where, opened.text
    found = re.search(entry.pattern, content) is not None
    return at(where, found, f"{'matched' if found else 'pattern not matched'}: /{entry.pattern}/")
