"""A pids cgroup per sandbox, where the host lets AWP make one: the process cap that binds root too.

cgroup v1 (`/sys/fs/cgroup/pids`) or v2 (a child of the runner's own cgroup, with `pids` delegated). Made at
provisioning under `awp/<attempt>`, joined by the launcher (limiter.py) before it execs bwrap, and removed
after the session, killing whatever is still in it: nothing the sandbox started outlives its Attempt. Where
no cgroup can be made (no permission, no controller) the sandbox runs with its rlimits only, and the record
says so.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")


def _parent() -> Path | None:
    """Where this host lets a pids cgroup be made, or None."""
    v1 = CGROUP_ROOT / "pids"
    if (v1 / "cgroup.procs").is_file() and os.access(v1, os.W_OK):
        return v1 / "awp"
    try:
        own = next(line[3:] for line in Path("/proc/self/cgroup").read_text().splitlines() if line.startswith("0::"))
    except (OSError, StopIteration):
        return None
    mine = CGROUP_ROOT / own.lstrip("/")
    controls = mine / "cgroup.subtree_control"
    if controls.is_file() and "pids" in controls.read_text().split() and os.access(mine, os.W_OK):
        return mine / "awp"
    return None


def make(name: str, max_pids: int) -> Path | None:
    """A pids cgroup `awp/<name>` capped at `max_pids`; None where the host has none to give."""
    parent = _parent()
    if parent is None:
        return None
    group = parent / name
    try:
        group.mkdir(parents=True, exist_ok=True)
        (group / "pids.max").write_text(str(max_pids))
    except OSError:
        remove(group)
        return None
    return group


def remove(group: Path, timeout_s: float = 5.0) -> None:
    """Kill every process left in `group`, then remove it."""
    deadline = time.monotonic() + timeout_s
    while group.is_dir():
        with contextlib.suppress(OSError):
            for pid in (group / "cgroup.procs").read_text().split():
                with contextlib.suppress(OSError):
                    os.kill(int(pid), signal.SIGKILL)
        try:
            group.rmdir()
            return
        except OSError:
            if time.monotonic() > deadline:
                return
            time.sleep(0.05)


def leftovers() -> list[Path]:
    """Every sandbox cgroup there is (a killed runner's included)."""
    parent = _parent()
    return sorted(p for p in parent.iterdir() if p.is_dir()) if parent is not None and parent.is_dir() else []
