"""Identifiers that become path components, run tags and commit trailers: prompt ids and packet-run ids.

They name files under `.awp/` (events/<packet_run>/<prompt>…), so a `/` or a leading `.` would let a packet or
a flag write outside it. Checked at the edge, where they are read, with the place they were written.
"""

from __future__ import annotations

import re

MAX_ID_LENGTH = 64
# A letter or digit first (no `.`/`..`, no option-like `-x`), then letters, digits, `_`, `.` and `-`.
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
ID_RULE = f"letters, digits, '_', '.' and '-', starting with a letter or digit, at most {MAX_ID_LENGTH} long"


def id_problem(value: str) -> str | None:
    """Why `value` is no safe identifier, or None when it is one."""
    if not value:
        return "is empty"
    if len(value) > MAX_ID_LENGTH:
        return f"is {len(value)} characters long (at most {MAX_ID_LENGTH})"
    if not _ID.match(value):
        return "is not an identifier"
    return None


def check_id(value: str, what: str) -> str:
    """`value` when it is a safe identifier; else ValueError saying what is wrong (`what`: 'prompt id', ...)."""
    problem = id_problem(value)
    if problem is not None:
        shown = value if len(value) <= 40 else value[:40] + "…"
        raise ValueError(f"{what} {shown!r} {problem} ({ID_RULE})")
    return value
