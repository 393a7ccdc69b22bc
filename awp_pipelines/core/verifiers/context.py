"""Where a contract is checked: the packet folder, its repositories, the environment for commands, and
whether its commands run in the verifier's sandbox (isolation/verifier_sandbox.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

PACKET_ALIAS = "packet"


@dataclass(frozen=True)
class VerifyContext:
    packet_root: Path
    repos: Mapping[str, Path]
    default_repo: str | None
    prompt_id: str = ""
    env: Mapping[str, str] = field(default_factory=dict)
    # `sandbox` unless the agent itself ran with `isolation: none`: a check never gets more rights than the
    # agent whose work it runs had. `none` runs the commands beside the runner, as before.
    isolation: Literal["sandbox", "none"] = "sandbox"
    state: tuple[Path, ...] = ()  # AWP's state folders, hidden from a sandboxed check where they fall in reach
    # The Attempt's tamper check, asked before the git clauses (after every command): a message when the trees'
    # git metadata changed since the session began, and then no git clause reads the repository.
    git_guard: Callable[[], str | None] | None = None

    def roots(self) -> dict[str, Path]:
        """Repository roots by name; `packet` always names the packet folder (it wins over a repo so named)."""
        return {**{name: Path(root) for name, root in self.repos.items()}, PACKET_ALIAS: Path(self.packet_root)}

    def default_name(self) -> str:
        """The repository an entry without a repo refers to; the packet folder when there is none."""
        return self.default_repo or PACKET_ALIAS
