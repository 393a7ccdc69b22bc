"""A provisioned sandbox: the grants, and how the agent's command and environment go through it.

Built once per Attempt at `provisioning` (engine/provisioning.py) and handed to the adapter on its
request; the adapter runs `command(argv)` with `environment(env)` instead of its argv and env.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from awp_pipelines.core.isolation.bwrap import bwrap_argv
from awp_pipelines.core.isolation.grants import Grants


@dataclass(frozen=True)
class Sandbox:
    grants: Grants
    # From the egress module (a network the sandbox may use, an in-sandbox forwarder): none → no network.
    network_args: Sequence[str] = ()
    network_env: Mapping[str, str] = field(default_factory=dict)
    inner: Callable[[list[str]], list[str]] | None = None

    def command(self, argv: Sequence[str], cwd: Path) -> list[str]:
        inside = self.inner(list(argv)) if self.inner is not None else list(argv)
        return bwrap_argv(self.grants, inside, cwd=cwd, network_args=self.network_args)

    def environment(self, env: Mapping[str, str]) -> dict[str, str]:
        """The agent's environment inside: its /tmp is private, the network's settings over the rest."""
        return {**env, "TMPDIR": "/tmp", **self.network_env}
