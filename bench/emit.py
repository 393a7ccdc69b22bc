"""How each benchmark script ends: its figures as one JSON line (for bench/suite.py) or a line for a reader."""

from __future__ import annotations

import json
from typing import Any


def emit(figures: dict[str, Any], as_json: bool, text: str) -> int:
    print(json.dumps(figures) if as_json else text)
    return 0
