"""What an agent's sandbox may use: processes, memory, file size and CPU time, each bounded.

Set per provider in resources/providers.yaml (`limits:`), over the defaults below, and recorded on the Attempt.
They are applied with setrlimit by a small launcher (limiter.py) that execs bubblewrap, so bwrap and every
process of the sandbox inherit them. RLIMIT_NPROC does not bind a runner that is root (the kernel exempts
uid 0, which the sandbox's user maps to), so where the host lets AWP make a pids cgroup (cgroup.py), the
sandbox's processes are also counted there: a fork bomb meets `pids.max` whoever runs AWP.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

LIMITS_HELP = ("What the agent's sandbox may use, over the defaults: processes (RLIMIT_NPROC, and a pids cgroup "
               "where the host has one), memory_mb (address space, RLIMIT_AS), file_size_mb (largest file it may "
               "write, RLIMIT_FSIZE), cpu_seconds (CPU time of each process, RLIMIT_CPU).")


class ResourceLimits(BaseModel):
    """The limits of one provider's sandboxes; an unset field keeps the default."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    processes: int | None = Field(None, ge=8, description="Processes and threads at once (default 4096).")
    memory_mb: int | None = Field(None, ge=64, description="Address space of each process, MiB (default 16384).")
    file_size_mb: int | None = Field(None, ge=1, description="Largest file a process may write, MiB "
                                     "(default 8192).")
    cpu_seconds: int | None = Field(None, ge=1, description="CPU time of each process, seconds (default 21600).")

    def over(self, base: ResourceLimits) -> ResourceLimits:
        """These limits where set, `base`'s elsewhere."""
        return base.model_copy(update=self.model_dump(exclude_none=True))


DEFAULT_LIMITS = ResourceLimits(processes=4096, memory_mb=16384, file_size_mb=8192, cpu_seconds=21600)


def resolved(configured: ResourceLimits | None) -> ResourceLimits:
    return configured.over(DEFAULT_LIMITS) if configured is not None else DEFAULT_LIMITS


def rlimits(limits: ResourceLimits) -> list[str]:
    """The launcher's arguments: `NAME=VALUE` with VALUE in the unit setrlimit takes."""
    mib = 1024 * 1024
    pairs = {"NPROC": limits.processes, "AS": limits.memory_mb and limits.memory_mb * mib,
             "FSIZE": limits.file_size_mb and limits.file_size_mb * mib, "CPU": limits.cpu_seconds}
    return [f"{name}={value}" for name, value in pairs.items() if value]
