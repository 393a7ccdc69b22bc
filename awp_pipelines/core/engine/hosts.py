"""Which machine this process runs on, as leases, locks and heartbeats name it.

The host name by default. `AWP_HOST_ID` overrides it where the name does not tell machines apart: containers
that reuse a name, or the test topology's two Celery "hosts" on one machine. A pid is only meaningful on its
own host: a holder on another host is judged by its heartbeat (orchestration/heartbeat.py), never by its pid.
"""

from __future__ import annotations

import os
import socket


def host_id() -> str:
    return os.environ.get("AWP_HOST_ID", "").strip() or socket.gethostname()
