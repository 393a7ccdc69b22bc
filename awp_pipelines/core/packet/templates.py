"""Where a prompt template is found: the packet's own `templates/` folder, then the home profile's. Both
`awp prompt new` (authoring) and lint's missing-template rule read it, so neither imports the other."""

from __future__ import annotations

from pathlib import Path

from awp_pipelines.core.packet import home_profile as home
from awp_pipelines.core.packet.packet import PROMPT_SUFFIX

PACKET_TEMPLATES = "templates"


def find_template(packet_root: Path, name: str) -> Path | None:
    """Packet-local `templates/NAME.prompt.md` first, then the home templates folder."""
    for folder in (packet_root / PACKET_TEMPLATES, home.templates_dir()):
        candidate = folder / f"{name}{PROMPT_SUFFIX}"
        if candidate.is_file():
            return candidate
    return None
