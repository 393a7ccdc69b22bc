"""`awp repo add NAME PATH`: declare a repository in a packet's manifest, as Prompt Runner's `repo add` does.

The manifest is a file people write comments in: only its `repos:` block is rewritten (in the form it was written
in, a mapping or a list), every other line is kept as it is. `--default` makes the new repo the default one (the
agent's cwd) and the others not; without it, the first repo declared becomes the default. The packet is loaded
again after the edit, and the file put back if it no longer loads.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from awp_pipelines.cli_features.authoring import check_slug, write_atomic
from awp_pipelines.core.packet.errors import PacketError
from awp_pipelines.core.packet.packet import NATIVE_MANIFEST, Packet, load_packet
from awp_pipelines.core.planning.preflight import tree_problem


@dataclass(frozen=True)
class RepoAdded:
    packet: Packet  # as loaded after the edit
    name: str
    path: str  # as written in the manifest
    default: bool
    warning: str | None  # its work tree is not there yet: what `awp run` would refuse


def add_repo(packet_dir: Path | str, name: str, path: str, default: bool = False) -> RepoAdded:
    packet = load_packet(packet_dir)
    check_slug(name, "repo name", "NAME")
    if name in packet.repos:
        raise PacketError(packet.manifest_file, f"repo '{name}' is declared already ({packet.repos[name].path})",
                          key=f"repos.{name}", line=packet.doc.line_of(("repos", name)),
                          hint="choose another name, or edit its path in the manifest")
    if not path.strip():
        raise PacketError("PATH", "the repo's path is empty", hint="give its folder, relative to the packet")
    written: Any = packet.raw.get("repos") or {}
    make_default = default or not written
    entry = {"path": path, "default": make_default}
    if isinstance(written, list):
        repos: Any = [_not_default(r) if make_default and default else r for r in written] + [{"name": name, **entry}]
    else:
        repos = {**{n: _not_default(r) if make_default and default else r for n, r in written.items()}, name: entry}
    original = packet.manifest_file.read_text(encoding="utf-8")
    write_atomic(packet.manifest_file, _with_repos(original, packet, repos))
    try:
        edited = load_packet(packet.root)
    except PacketError:
        write_atomic(packet.manifest_file, original)
        raise
    problem = tree_problem(edited.repos[name].path)
    return RepoAdded(edited, name, path, make_default, f"{problem[0]} ({problem[1]})" if problem else None)


def _not_default(repo: Any) -> Any:
    return {**repo, "default": False} if isinstance(repo, dict) and repo.get("default") else repo


def _with_repos(text: str, packet: Packet, repos: Any) -> str:
    """`text` with its top-level `repos:` block replaced by `repos` (or the block added at the end of the YAML)."""
    lines = text.splitlines(keepends=True)
    block = yaml.safe_dump({"repos": repos}, sort_keys=False, default_flow_style=False, allow_unicode=True)
    first, last = _repos_block(lines, packet)
    return "".join([*lines[:first], block, *lines[last:]])


def _repos_block(lines: list[str], packet: Packet) -> tuple[int, int]:
    """[first, last) of the lines of the top-level `repos:` key, its trailing comments and blank lines left out;
    where there is none, the empty range at the end of the YAML (before a front matter's closing `---`)."""
    native = packet.manifest_file.name == NATIVE_MANIFEST
    end = len(lines) if native else next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    if "repos" not in packet.raw:
        if end and not lines[end - 1].endswith("\n"):
            lines[end - 1] += "\n"
        return end, end
    start = (packet.doc.line_of(("repos",)) or 1) - 1
    stop = start + 1
    while stop < end and (lines[stop][:1] in (" ", "\t", "-", "#", "\n") or not lines[stop].strip()):
        stop += 1
    while stop > start + 1 and (not lines[stop - 1].strip() or lines[stop - 1].lstrip().startswith("#")):
        stop -= 1
    return start, stop
