"""Which machine this process runs on, as leases, locks and heartbeats name it.

The host name by default. `AWP_HOST_ID` overrides it where the name does not tell machines apart: containers
that reuse a name, or the test topology's two Celery "hosts" on one machine. A Docker container on the host
network (deploy/docker/dagster.yaml) has the host's name but pids of its own (the run worker is pid 1), so it
names itself `<host name>/<container id>`: the host's processes never judge its holders by their pids. A pid
is only meaningful on its own host: a holder on another host is judged by its heartbeat
(orchestration/ledger/liveness.py), never by its pid.
"""

from __future__ import annotations

import functools
import os
import re
import socket
from pathlib import Path

# Docker bind-mounts each container's own /etc/hostname, /etc/hosts, resolv.conf from <data-root>/containers/<id>/.
CONTAINER_MOUNT = re.compile(r"/containers/([0-9a-f]{64})/")


def host_id() -> str:
    return os.environ.get("AWP_HOST_ID", "").strip() or _container() or socket.gethostname()


@functools.cache
def _container() -> str | None:
    return container_host(Path("/.dockerenv"), Path("/proc/self/mountinfo"))


def container_host(marker: Path, mountinfo: Path) -> str | None:
    """`<host name>/<container id, 12 digits>` inside a Docker container (its marker file exists), else None."""
    if not marker.exists():
        return None
    try:
        found = CONTAINER_MOUNT.search(mountinfo.read_text(errors="replace"))
    except OSError:
        return None
    return f"{socket.gethostname()}/{found.group(1)[:12]}" if found else None
