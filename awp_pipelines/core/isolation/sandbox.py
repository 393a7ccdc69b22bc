"""A provisioned sandbox: the grants, and how the agent's command and environment go through it.

Built once per Attempt at `provisioning` (engine/provisioning.py) and handed to the adapter on its
request; the adapter runs `command(argv)` with `environment(env)` instead of its argv and env.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from awp_pipelines.core.isolation import limiter
from awp_pipelines.core.isolation.bwrap import bwrap_argv
from awp_pipelines.core.isolation.grants import Grants
from awp_pipelines.core.isolation.limits import DEFAULT_LIMITS, ResourceLimits, rlimits


@dataclass(frozen=True)
class Sandbox:
    grants: Grants
    # From the egress module (a network the sandbox may use, an in-sandbox forwarder): none → no network.
    network_args: Sequence[str] = ()
    network_env: Mapping[str, str] = field(default_factory=dict)
    inner: Callable[[list[str]], list[str]] | None = None
    limits: ResourceLimits = DEFAULT_LIMITS
    cgroup: Path | None = None  # a pids cgroup the launcher joins (cgroup.py); None: rlimits only

    def command(self, argv: Sequence[str], cwd: Path) -> list[str]:
        """The launcher (limits, cgroup), then bwrap, then (inside) the network's forwarder and `argv`."""
        inside = self.inner(list(argv)) if self.inner is not None else list(argv)
        return [*launcher(self.limits, self.cgroup),
                *bwrap_argv(self.grants, inside, cwd=cwd, network_args=self.network_args)]

    def environment(self, env: Mapping[str, str]) -> dict[str, str]:
        """The agent's environment inside: its /tmp is private, the network's settings over the rest."""
        return {**env, "TMPDIR": "/tmp", **self.network_env}


def launcher(limits: ResourceLimits, cgroup: Path | None) -> list[str]:
    """What goes before bwrap: util-linux's `prlimit` where it is installed (a C program: about a millisecond),
    behind a shell that first joins the cgroup; else the Python launcher (limiter.py), which does both."""
    prlimit = shutil.which("prlimit", path=os.defpath)
    if prlimit is None:
        joins = ["--cgroup", str(cgroup / "cgroup.procs")] if cgroup is not None else []
        return [sys.executable, "-I", "-S", "-c", Path(limiter.__file__).read_text(encoding="utf-8"), *joins,
                *rlimits(limits), "--"]
    options = [f"--{name.lower()}={value}" for name, value in (part.split("=", 1) for part in rlimits(limits))]
    options = [f"{o}:{int(o.split('=')[1]) + 5}" if o.startswith("--cpu=") else o for o in options]
    limited = [prlimit, *options, "--"]
    if cgroup is None:
        return limited
    # The shell joins the cgroup (its pid, which prlimit and then bwrap keep by exec) before anything forks.
    return ["/bin/sh", "-c", 'echo $$ > "$0" 2>/dev/null || echo "awp sandbox: cannot join its cgroup $0" >&2; '
            'exec "$@"', str(cgroup / "cgroup.procs"), *limited]
