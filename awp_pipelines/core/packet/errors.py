"""Errors a user can act on: where (file, line), what (key, problem) and how to fix it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass
class PacketError(Exception):
    """Invalid packet input. The CLI prints `str(err)` as one line and exits 2; never a traceback."""

    file: Path | str
    message: str
    key: str | None = None
    line: int | None = None
    hint: str | None = None

    def __str__(self) -> str:
        where = str(self.file) + (f":{self.line}" if self.line else "")
        key = f" {self.key}:" if self.key else ""
        hint = f" ({self.hint})" if self.hint else ""
        return f"{where}:{key} {self.message}{hint}"

    def as_dict(self) -> dict[str, object]:
        return {
            "file": str(self.file),
            "line": self.line,
            "key": self.key,
            "message": self.message,
            "hint": self.hint,
        }


class StorageUnavailable(Exception):
    """The Dagster instance's database failed (a Postgres outage, a locked SQLite file): not bad input. The CLI
    prints `str(err)` as one line and exits 1; the packet run goes on with `--packet-run` once it is back."""
