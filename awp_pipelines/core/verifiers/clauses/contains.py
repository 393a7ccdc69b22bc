"""`contains`: a literal text in a file."""

from __future__ import annotations

from awp_pipelines.core.packet.model.contract import ContainsCheck

from ..context import VerifyContext
from .outcome import Outcome, at, open_text


def contains(entry: ContainsCheck, ctx: VerifyContext) -> Outcome:
    opened = open_text(entry, ctx)
    if isinstance(opened, Outcome):
        return opened
    where, content = opened.where, opened.text
    found = entry.text in content
    return at(where, found, f"{'found' if found else 'text not found'}: {entry.text!r}")
