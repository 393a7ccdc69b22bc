"""A database outage under `awp run`, said once per change: one line when the instance's database stops
answering, one when it answers again.

Without this, each retry of each connection prints dagster-postgres's "Retrying failed database connection"
warning (the psycopg2 error in full), and each log line a step writes meanwhile prints Dagster's "Exception
while writing logger call to event log": dozens of lines for one outage. While `quiet_outages()` is in force
those are kept back and the state changes printed instead; the runner calls `answered()` after each read of the
instance that succeeded, which ends a stretch of outage. Pure: the standard library only.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stderr
from typing import TextIO

RETRY_WARNING = "Retrying failed database connection"  # dagster_postgres.utils.retry_pg_connection_fn
LOG_WRITE_FAILED = "Exception while writing logger call to event log"  # dagster/_core/instance/types.py


class OutageLines:
    """The outage's state, and the one line per change."""

    def __init__(self, say: Callable[[str], None]) -> None:
        self._say = say
        self._lock = threading.Lock()
        self.down = False

    def failed(self, detail: str) -> None:
        with self._lock:
            if self.down:
                return
            self.down = True
        self._say(f"awp run: the instance's database is not answering ({_first_line(detail)}); retrying, "
                  "this line is said once per outage")

    def answered(self) -> None:
        with self._lock:
            if not self.down:
                return
            self.down = False
        self._say("awp run: the instance's database answers again")


class _KeepBackRetries(logging.Filter):
    def __init__(self, lines: OutageLines) -> None:
        super().__init__()
        self.lines = lines

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if message.startswith(RETRY_WARNING):
            self.lines.failed(message.removeprefix(RETRY_WARNING).lstrip(": "))
            return False
        return True


class _KeepBackLogWriteFailures:
    """stderr, less Dagster's line for each log call the database did not take."""

    def __init__(self, inner: TextIO, lines: OutageLines) -> None:
        self._inner, self._lines = inner, lines

    def write(self, text: str) -> int:
        if text.startswith(LOG_WRITE_FAILED):
            self._lines.failed(text.removeprefix(LOG_WRITE_FAILED).lstrip(": "))
            return len(text)
        return self._inner.write(text)

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)


_current: OutageLines | None = None


def answered() -> None:
    """A read of the instance just succeeded: an outage in progress is over."""
    if _current is not None:
        _current.answered()


@contextmanager
def quiet_outages(say: Callable[[str], None]) -> Iterator[OutageLines]:
    """While in force (one `awp run`), database failures print through `say`, once per change."""
    global _current
    lines = OutageLines(say)
    keep_back = _KeepBackRetries(lines)
    root = logging.getLogger()
    root.addFilter(keep_back)
    _current = lines
    try:
        with redirect_stderr(_KeepBackLogWriteFailures(sys.stderr, lines)):  # type: ignore[type-var]
            yield lines
    finally:
        _current = None
        root.removeFilter(keep_back)


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else "no detail"
    return line if len(line) <= 160 else line[:159] + "…"
