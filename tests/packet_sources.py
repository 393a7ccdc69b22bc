"""Where the Prompt Runner-format packets under test come from.

The project's own fixture packets (tests/fixtures/prompt_runner) always; Prompt Runner's example packets
(../shared/compat/prompt_runner) as well when the workspace has them. A test that takes `prompt_runner_root`
runs once per source, so a clone without ../shared still tests Prompt Runner compatibility.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURE_PACKETS = REPO_ROOT / "tests" / "fixtures" / "prompt_runner"
SHARED_COMPAT = REPO_ROOT.parent / "shared" / "compat" / "prompt_runner"
MANIFEST = "prompt_runner_packet.md"
PACKET_NAMES = ("authoring_packet", "claude_packet", "multi_repo_packet", "simulated_recovery_packet",
                "single_repo_packet")


@dataclass(frozen=True)
class PacketSource:
    """One folder holding the five Prompt Runner-format packets."""

    name: str
    root: Path

    def missing(self) -> list[str]:
        return [p for p in PACKET_NAMES if not (self.root / p / MANIFEST).is_file()]

    def __str__(self) -> str:  # the test id: test_x[fixtures-...] or test_x[shared-...]
        return self.name


def packet_sources() -> list[PacketSource]:
    """The project's fixtures, then ../shared/compat when it exists; never an empty list."""
    sources = [PacketSource("fixtures", FIXTURE_PACKETS)]
    if SHARED_COMPAT.is_dir():
        sources.append(PacketSource("shared", SHARED_COMPAT))
    return sources
