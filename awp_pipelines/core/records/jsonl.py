"""JSON for the event streams: orjson where it can, the standard library where orjson refuses.

Agent streams are gigabytes of JSON lines; orjson parses and writes them several times faster. What
orjson refuses and the standard library takes (NaN, integers past 64 bits, lone surrogates) goes the slow
way, so a line that parsed before still parses, and a line that was written before is still written.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

# Dates and dataclasses go through `default=str`, as the json module wrote them.
_OPTIONS = (orjson.OPT_NON_STR_KEYS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
            | orjson.OPT_APPEND_NEWLINE)


def loads(text: str | bytes) -> Any:
    """One JSON document; raises `json.JSONDecodeError` (orjson's error is one) when neither parser takes it."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def dumps_line(obj: Any) -> bytes:
    """One JSON line, UTF-8, newline-terminated; values JSON does not know are written as their str()."""
    try:
        return orjson.dumps(obj, default=str, option=_OPTIONS)
    except (orjson.JSONEncodeError, TypeError):
        return (json.dumps(obj, default=str) + "\n").encode("utf-8")
