"""Home-scoped defaults: `~/.config/awp/` (or AWP_CONFIG_HOME) with config.md and profiles/NAME.md; where
AWP's home has no such file, Prompt Runner's home `~/.config/prompt_runner/` (same layout) is read."""

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


def prompt_runner_home() -> Path:
    """Prompt Runner's home (reference/prompt-runner.md): a user moving over keeps their profiles."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "prompt_runner"


def profiles_dir() -> Path:
    return config_home() / "profiles"


def profile_dirs() -> list[Path]:
    """Where profiles are looked for, first wins: AWP's, then Prompt Runner's."""
    return [profiles_dir(), prompt_runner_home() / "profiles"]


def _first(*relative: str) -> Path | None:
    for home in (config_home(), prompt_runner_home()):
        if (file := home.joinpath(*relative)).is_file():
            return file
    return None


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
    file = _first("config.md")
    return _load(file, "config") if file else None


def load_profile(name: str) -> LoadedProfile | None:
    """None when absent: packets travel between machines, so a missing profile is a warning."""
    file = _first("profiles", f"{name}.md")
    return _load(file, name) if file else None


def list_profiles() -> list[LoadedProfile]:
    files: dict[str, Path] = {}
    for folder in reversed(profile_dirs()):  # AWP's last, so its profile of a name wins
        files.update({f.name[:-3]: f for f in folder.glob("*.md")} if folder.is_dir() else {})
    return [_load(files[name], name) for name in sorted(files)]
