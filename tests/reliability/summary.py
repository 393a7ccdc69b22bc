"""The reliability summary table: one row per fault, printed at the end of the pytest session.

A test records its row with the `reliability_row` fixture (tests/reliability/conftest.py). Rows travel on the
test's report (`user_properties`), so rows recorded in xdist workers reach the controller, which prints them.
Rows with the same fault name are summed (e.g. the fuzzer's shards). A count left out prints `-`: not
measured by that fault, which is not the same as 0.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

import pytest

ROW_KEY = "awp_reliability_row"
COUNTS = ("tries", "survived", "records_lost", "commits_doubled", "budget_overruns", "secrets_leaked")


@dataclass
class Row:
    fault: str
    tries: int | None = None
    survived: int | None = None
    records_lost: int | None = None
    commits_doubled: int | None = None
    budget_overruns: int | None = None
    secrets_leaked: int | None = None
    seconds: float | None = None
    note: str = ""

    def add(self, other: Row) -> None:
        for name in (*COUNTS, "seconds"):
            mine, theirs = getattr(self, name), getattr(other, name)
            if theirs is not None:
                setattr(self, name, theirs if mine is None else mine + theirs)
        if other.note and other.note != self.note:
            self.note = f"{self.note}; {other.note}" if self.note else other.note

    @property
    def ok(self) -> bool:
        lost = [getattr(self, n) or 0 for n in COUNTS[2:]]
        return not any(lost) and (self.tries is None or self.survived == self.tries)


def make_row(fault: str, **values: Any) -> dict[str, Any]:
    """A row as plain data (it crosses the xdist boundary); unknown columns are a test bug."""
    allowed = {f.name for f in fields(Row)} - {"fault"}
    unknown = set(values) - allowed
    if unknown:
        raise TypeError(f"unknown reliability columns: {', '.join(sorted(unknown))}")
    return asdict(Row(fault, **values))


class _Collector:
    def __init__(self) -> None:
        self.rows: dict[str, Row] = {}

    def collect(self, report: pytest.TestReport) -> None:
        # The teardown report carries every property the test and its fixtures recorded.
        if report.when != "teardown":
            return
        for key, value in report.user_properties:
            if key == ROW_KEY:
                row = Row(**value)
                if row.fault in self.rows:
                    self.rows[row.fault].add(row)
                else:
                    self.rows[row.fault] = row

    def lines(self) -> list[str]:
        header = ["fault", "tries", "survived", "records lost", "commits doubled", "budget overruns",
                  "secrets leaked", "seconds", "ok", "note"]
        table = [header]
        for row in self.rows.values():
            cells = [row.fault, *("-" if getattr(row, n) is None else str(getattr(row, n)) for n in COUNTS),
                     "-" if row.seconds is None else f"{row.seconds:.1f}", "yes" if row.ok else "NO", row.note]
            table.append(cells)
        widths = [max(len(r[i]) for r in table) for i in range(len(header) - 1)]
        return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)) + "  " + r[-1] for r in table]


_COLLECTOR = _Collector()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _COLLECTOR.collect(report)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _COLLECTOR.rows:
        return
    terminalreporter.section("reliability summary")
    for line in _COLLECTOR.lines():
        terminalreporter.write_line(line)
