"""What a more trusted reader takes as configuration, wherever it lies inside a tree the agent may write.

A packet can live inside its own target tree (`path: .`), and a tree can hold another packet with its instance.
Whatever AWP or Dagster later reads as instructions there must not be the agent's to write: every `.awp/`
(an instance: its databases, its `dagster.yaml`) is hidden, and a packet's own files (`packet.yaml`, `prompts/`,
`resources/`: manifest, prompts, providers) and every instance config (`dagster.yaml`, `workspace.yaml`) are
read-only. Found by one walk of the tree at provisioning (no link followed, `.git`, `node_modules`, virtual
environments and caches not entered), bounded by MAX_ENTRIES so a huge tree costs a bounded time.
"""

from __future__ import annotations

import os
from pathlib import Path

from awp_pipelines.core.isolation.grants import PathGrant

INSTANCE_CONFIG = frozenset({"dagster.yaml", "dagster.yml", "workspace.yaml"})
PACKET_FILES = ("packet.yaml", "prompts", "resources")
# Folders of tools and caches, never a packet's or an instance's place: not entered, for speed.
NOT_ENTERED = frozenset({".git", "node_modules", ".venv", "venv", "__pycache__", ".tox", ".mypy_cache",
                         ".ruff_cache"})
MAX_ENTRIES = 200_000


def packet_file_grants(root: Path) -> list[PathGrant]:
    """A packet's own files, read-only, where they exist."""
    return [PathGrant(path=str(root / name), mode="ro", why="packet files")
            for name in PACKET_FILES if (root / name).exists()]


def trusted_in(tree: Path, *, max_entries: int = MAX_ENTRIES) -> list[PathGrant]:
    """The masks of `tree`: every `.awp/` hidden, every packet's files and instance config read-only."""
    grants: list[PathGrant] = []
    seen = 0
    stack = [tree]
    while stack and seen < max_entries:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        seen += len(entries)
        names = {entry.name for entry in entries}
        if "packet.yaml" in names and folder != tree / ".awp":
            grants += packet_file_grants(Path(folder))
        for entry in entries:
            if entry.is_symlink():
                continue
            if entry.name == ".awp" and entry.is_dir():
                grants.append(PathGrant(path=entry.path, mode="hidden", why="an instance's state"))
            elif entry.name in INSTANCE_CONFIG and entry.is_file():
                grants.append(PathGrant(path=entry.path, mode="ro", why="an instance's config"))
            elif entry.is_dir() and entry.name not in NOT_ENTERED:
                stack.append(Path(entry.path))
    return grants
