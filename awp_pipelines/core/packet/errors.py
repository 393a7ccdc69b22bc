"""Errors a user can act on: where (file, line), what (key, problem) and how to fix it."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

_PLAIN_KEY = re.compile(r"[\w.\-]+")


def shown_key(key: str) -> str:
    """A dotted key as written when it is plain; quoted with its escapes when not (a key of spaces, a newline in
    it), so the error stays one line whose key can be told from its message."""
    return key if _PLAIN_KEY.fullmatch(key) else json.dumps(key, ensure_ascii=False)


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
        key = f" {shown_key(self.key)}:" if self.key else ""
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
