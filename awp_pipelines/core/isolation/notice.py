"""`awp run` says out loud when the packet turns isolation off, and when its isolation changed since the last
run: a packet inside its own work tree could have been edited by an agent, and a word it wrote must never be
obeyed in silence. The last run's settings are kept in the state folder, which no sandbox sees.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

SEEN_FILE = "isolation-seen.json"


def isolation_notices(words: Mapping[str, str | None], state_root: Path) -> list[str]:
    """One line for the prompts the packet runs unsandboxed, one per prompt whose packet setting changed since
    the last run; `words`: prompt id → the packet's `isolation` (None: unset). Remembers `words` for the next."""
    seen_file = state_root / SEEN_FILE
    try:
        previous = json.loads(seen_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        previous = None
    lines = []
    off = [prompt for prompt, word in words.items() if word == "none"]
    if off:
        lines.append(f"the packet turns isolation off (`isolation: none`) for {', '.join(off)}: these agents run "
                     "unsandboxed, seeing everything this runner can")
    if isinstance(previous, dict):
        for prompt, word in words.items():
            if prompt in previous and previous[prompt] != word:
                lines.append(f"{prompt}: the packet's isolation changed since the last run "
                             f"({previous[prompt] or 'unset'} → {word or 'unset'}); check who changed it")
    state_root.mkdir(parents=True, exist_ok=True)
    seen_file.write_text(json.dumps({**(previous if isinstance(previous, dict) else {}), **words}), encoding="utf-8")
    return lines
