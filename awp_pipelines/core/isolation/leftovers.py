"""What a killed runner's sandboxes left behind, removed by the next Attempt that provisions one.

A runner killed with SIGKILL closes nothing: its Attempts' egress sockets stay under `.awp/sandbox/<attempt>/`
and their pids cgroups stay (empty: bwrap dies with its parent). Each live Attempt holds a lock on its sandbox
folder (`live.lock`, flock: the kernel drops it when the holder dies) and names its cgroup after the runner's
process id, so the next provisioning can tell a dead Attempt's leftovers from a live one's and removes them.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
from pathlib import Path

from awp_pipelines.core.isolation import cgroup

LOCK = "live.lock"


def hold(folder: Path) -> int:
    """Mark `folder` as a live Attempt's for as long as the returned descriptor is open."""
    fd = os.open(folder / LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


def release(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)


def _dead(folder: Path) -> bool:
    try:
        fd = os.open(folder / LOCK, os.O_RDWR | os.O_CLOEXEC)
    except FileNotFoundError:
        return True  # from before the lock existed, or already ended
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    finally:
        os.close(fd)
    return True


def sweep(sandboxes: Path) -> list[Path]:
    """Remove the sockets (and scoped config copies) of every Attempt under `sandboxes` whose runner is gone,
    and every sandbox cgroup whose runner process is gone. Returns the folders cleaned."""
    cleaned = []
    for folder in sorted(sandboxes.iterdir()) if sandboxes.is_dir() else []:
        leftover = [p for p in (folder / "egress" / "sockets", *folder.glob("config-*")) if p.exists()]
        if leftover and _dead(folder):
            for path in leftover:
                shutil.rmtree(path, ignore_errors=True)
            cleaned.append(folder)
    for group in cgroup.leftovers():
        runner = group.name.split("-", 1)[0]
        if runner.isdigit() and not Path(f"/proc/{runner}").exists():
            cgroup.remove(group)
    return cleaned
