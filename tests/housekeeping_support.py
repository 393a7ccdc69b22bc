"""Helpers of test_housekeeping.py that test_location_recovery.py uses too: here at tests/ root, where a test module in
any folder imports them by name."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import sqlalchemy as sa


@contextmanager
def counted_queries() -> Iterator[list[str]]:
    """Every SQL statement any engine runs while the block runs."""
    seen: list[str] = []

    def count(_conn: object, _cursor: object, statement: str, *_: object) -> None:
        seen.append(statement)

    sa.event.listen(sa.engine.Engine, "before_cursor_execute", count)
    try:
        yield seen
    finally:
        sa.event.remove(sa.engine.Engine, "before_cursor_execute", count)
