"""Where a prompt template is found: the packet's own `templates/` folder, then the home profile's. Both
`awp prompt new` (authoring) and lint's missing-template rule read it, so neither imports the other; `awp template
list` lists what it finds."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

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


@dataclass(frozen=True)
class TemplateEntry:
    """One template `awp prompt new --template NAME` can start from: where it comes from and its file."""

    name: str
    source: Literal["builtin", "home", "packet"]
    path: Path | None  # None: built into AWP


def list_templates(packet_root: Path | None, builtins: tuple[str, ...] = ()) -> list[TemplateEntry]:
    """Prompt Runner's `template list`: the built-in templates, then the home folder's, then the packet's, a later
    one of a name replacing an earlier (find_template's order), sorted by name."""
    entries = {name: TemplateEntry(name, "builtin", None) for name in builtins}
    folders: list[tuple[Literal["home", "packet"], Path]] = [("home", home.templates_dir())]
    if packet_root is not None:
        folders.append(("packet", packet_root / PACKET_TEMPLATES))
    for source, folder in folders:
        for file in sorted(folder.glob(f"*{PROMPT_SUFFIX}")) if folder.is_dir() else []:
            name = file.name.removesuffix(PROMPT_SUFFIX)
            entries[name] = TemplateEntry(name, source, file)
    return [entries[name] for name in sorted(entries)]
