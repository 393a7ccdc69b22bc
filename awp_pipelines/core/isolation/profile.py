"""The execution profile: does an agent run in a sandbox (`isolation: sandbox`) or beside the runner (`none`)?

Set per provider or account (resources/providers.yaml) or per packet (manifest, front matter or home
profile: the packet's word wins, then the account's, then the provider's). Unset, every agent that is a
separate process (every CLI kind and `command`) runs in the sandbox on Linux. `simulated` and
`openai_http` run inside AWP's own process and start no agent process: they need no sandbox.
"""

from __future__ import annotations

import sys
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Isolation = Literal["sandbox", "none"]
ISOLATION_HELP = ("Where the agent process runs: `sandbox` (default on Linux for every CLI kind and `command`: "
                  "bubblewrap, only the work trees, the account's config folder and a private HOME visible) or "
                  "`none` (beside the runner, seeing all it sees: only when written). `simulated` and "
                  "`openai_http` run in AWP's own process and need none.")
# Kinds that run in AWP's own process: no agent process, nothing to sandbox.
IN_PROCESS_KINDS = frozenset({"simulated", "openai_http"})


class ExecutionProfile(BaseModel):
    """The isolation an Attempt's agent ran under, and which setting decided it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    isolation: Isolation | Literal["in_process"] = Field(
        description="sandbox, none, or in_process (a kind that starts no agent process).")
    set_by: str = Field(description="Where the isolation came from: packet, account NAME, provider NAME, or the "
                        "default.")


def resolve_profile(kind: str, *, packet: Isolation | None, account: tuple[str, Isolation | None] | None,
                    provider: tuple[str, Isolation | None], platform: str = sys.platform) -> ExecutionProfile:
    """The packet's setting, else the account's, else the provider's, else the default (sandbox)."""
    if kind in IN_PROCESS_KINDS:
        return ExecutionProfile(isolation="in_process", set_by=f"kind {kind} runs in AWP's process")
    if packet is not None:
        return ExecutionProfile(isolation=packet, set_by="packet")
    if account is not None and account[1] is not None:
        return ExecutionProfile(isolation=account[1], set_by=f"account {account[0]}")
    if provider[1] is not None:
        return ExecutionProfile(isolation=provider[1], set_by=f"provider {provider[0]}")
    return ExecutionProfile(isolation="sandbox", set_by=f"default ({platform})")
