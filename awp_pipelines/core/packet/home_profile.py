"""Home-scoped defaults: `~/.config/awp/` (or AWP_CONFIG_HOME) with config.md and profiles/NAME.md."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from pydantic import Field

from awp_pipelines.core.packet.model.execution import ExecutionSettings
from awp_pipelines.core.packet.validation import validate_doc
from awp_pipelines.core.packet.yamlsrc import split_front_matter


class ProfileSettings(ExecutionSettings):
    description: str | None = Field(None, description="What this profile is for.")


def config_home() -> Path:
    env = os.environ.get("AWP_CONFIG_HOME")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "awp"


def profiles_dir() -> Path:
    return config_home() / "profiles"


def templates_dir() -> Path:
    return config_home() / "templates"


@dataclass(frozen=True)
class LoadedProfile:
    name: str
    file: Path
    settings: ProfileSettings


def _load(file: Path, name: str) -> LoadedProfile:
    fm = split_front_matter(file.read_text(encoding="utf-8"), file, required=False)
    return LoadedProfile(name, file, validate_doc(ProfileSettings, fm.doc))


def load_global() -> LoadedProfile | None:
    file = config_home() / "config.md"
    return _load(file, "config") if file.is_file() else None


def load_profile(name: str) -> LoadedProfile | None:
    """None when absent: packets travel between machines, so a missing profile is a warning."""
    file = profiles_dir() / f"{name}.md"
    return _load(file, name) if file.is_file() else None


def list_profiles() -> list[LoadedProfile]:
    folder = profiles_dir()
    if not folder.is_dir():
        return []
    return [_load(f, f.name[:-3]) for f in sorted(folder.glob("*.md"))]
