"""What provisioning records on the Attempt: the execution profile, the grants, the node, the sandbox's version."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from awp_pipelines.core.isolation.grants import Grants
from awp_pipelines.core.isolation.limits import ResourceLimits
from awp_pipelines.core.isolation.profile import ExecutionProfile


class IsolationRecord(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    profile: ExecutionProfile = Field(description="sandbox, none or in_process, and which setting decided it.")
    grants: Grants | None = Field(None, description="What the sandbox granted (paths and modes, hosts, variable "
                                  "names); None without a sandbox.")
    node: str = Field(description="The host the agent ran on.")
    sandbox: str | None = Field(None, description="The sandbox and its version (`bubblewrap 0.8.0`); None without.")
    limits: ResourceLimits | None = Field(None, description="The sandbox's resource limits (rlimits); None without.")
    process_cap: str | None = Field(None, description="Where the process limit binds: `pids cgroup PATH`, or "
                                    "`rlimit only` where the host gives no cgroup (RLIMIT_NPROC does not bind root).")

    def line(self) -> str:
        """One short line for metadata: `sandbox (default (linux)), bubblewrap 0.8.0 on host: 3 rw, 5 ro, …`."""
        head = f"{self.profile.isolation} ({self.profile.set_by})"
        if self.grants is None:
            return f"{head} on {self.node}"
        counts: dict[str, int] = {}
        for grant in self.grants.ordered():
            counts[grant.mode] = counts.get(grant.mode, 0) + 1
        modes = ", ".join(f"{n} {m}" for m, n in sorted(counts.items()))
        hosts = ", ".join(self.grants.hosts) or "no network"
        limits = ""
        if self.limits is not None:
            limits = (f"; limits {self.limits.processes} processes, {self.limits.memory_mb} MiB, files "
                      f"{self.limits.file_size_mb} MiB, {self.limits.cpu_seconds} s CPU")
        return f"{head}, {self.sandbox} on {self.node}: {modes}; {hosts}{limits}"
