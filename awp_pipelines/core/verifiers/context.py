"""Where a contract is checked: the packet folder, its repositories, and the environment for commands."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

PACKET_ALIAS = "packet"


@dataclass(frozen=True)
class VerifyContext:
    packet_root: Path
    repos: Mapping[str, Path]
    default_repo: str | None
    prompt_id: str = ""
    env: Mapping[str, str] = field(default_factory=dict)

    def roots(self) -> dict[str, Path]:
        """Repository roots by name; `packet` always names the packet folder (it wins over a repo so named)."""
        return {**{name: Path(root) for name, root in self.repos.items()}, PACKET_ALIAS: Path(self.packet_root)}

    def default_name(self) -> str:
        """The repository an entry without a repo refers to; the packet folder when there is none."""
        return self.default_repo or PACKET_ALIAS
