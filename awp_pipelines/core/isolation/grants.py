"""What a sandbox grants: paths with their modes, the hosts it may reach, the environment names it gets.

A value, recorded on the Attempt as it is (paths and modes, hosts, variable names: never a value). Modes:
`ro` bound read-only, `rw` bound read-write, `tmpfs` an empty private folder, `hidden` an empty folder (or
an empty file) over what is there, for state that sits inside a granted tree (the instance, `.awp/`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from awp_pipelines.core.records.git_tamper import git_dirs

GrantMode = Literal["ro", "rw", "tmpfs", "hidden"]


class PathGrant(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str = Field(description="Absolute path, the same inside the sandbox as outside.")
    mode: GrantMode = Field(description="ro, rw, tmpfs (empty, private) or hidden (masked inside a granted tree).")
    why: str = Field("", description="What the grant is for (work tree, account config, the CLI's install, …).")
    source: str | None = Field(None, description="Bound from this path instead of `path` itself (a scoped copy "
                               "shown at the original's place).")


class Grants(BaseModel):
    """Everything the sandbox lets the agent reach."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    paths: list[PathGrant] = Field(default_factory=list, description="Path grants, mounted in this order after "
                                   "the system's read-only folders (a deeper path after its parent).")
    hosts: list[str] = Field(default_factory=list, description="Hosts the agent may reach (none: no network).")
    env_names: list[str] = Field(default_factory=list, description="Names of the variables the agent gets.")

    def ordered(self) -> list[PathGrant]:
        """One grant per path (the last one written wins), parents before children so a mask or a deeper
        grant lands over its tree."""
        last: dict[str, PathGrant] = {}
        for grant in self.paths:
            last.pop(grant.path, None)
            last[grant.path] = grant
        return sorted(last.values(), key=lambda g: len(Path(g.path).parts))

    def mode_of(self, path: str) -> GrantMode | None:
        return next((g.mode for g in reversed(self.paths) if g.path == path), None)


def git_metadata_grants(tree: Path) -> list[PathGrant]:
    """A work tree's git metadata, wholly read-only inside the sandbox: its `.git` (a folder, or a worktree's
    gitdir file) bound read-only over itself, so it can be neither written, replaced nor renamed (a mount point
    cannot be), and a worktree's real git dir and common dir likewise. AWP runs git on them outside afterwards
    (docs/security.md); the agent reads its history, and AWP alone commits."""
    return [PathGrant(path=str(path), mode="ro", why="git metadata: AWP runs git on it outside")
            for path in dict.fromkeys((tree / ".git", *git_dirs(tree))) if path.exists()]
