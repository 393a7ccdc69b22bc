"""`files_exist` and `files_absent`."""

from __future__ import annotations

import os

from awp_pipelines.core.packet.model.contract import Entry

from ..context import VerifyContext
from ..paths import locate
from .outcome import Outcome, at, unlocated


def files_exist(entry: Entry, ctx: VerifyContext) -> Outcome:
    where = locate(entry, ctx)
    if where.resolved is None:
        return unlocated(where)
    exists = where.resolved.exists()
    return at(where, exists, f"{'exists' if exists else 'missing'}: {where.resolved}")


def files_absent(entry: Entry, ctx: VerifyContext) -> Outcome:
    where = locate(entry, ctx)
    if where.resolved is None:
        return unlocated(where)
    # lexists: a dangling symlink is still something the prompt left behind.
    present = os.path.lexists(where.resolved)
    return at(where, not present, f"{'present' if present else 'absent'}: {where.resolved}")
