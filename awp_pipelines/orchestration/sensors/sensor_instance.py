"""The instance a sensor tick reads, opened once per code-server process rather than once per tick.

Under the daemon, each tick of a sensor is a gRPC call to the code server, whose `context.instance` is a fresh
`DagsterInstance.from_ref`: storages built, and on SQLite the alembic revision of each database checked by loading
every migration script. That was most of the CPU of a tick (py-spy of the code server, bench/sensor_daemon_cpu.py):
the two AWP sensors ticking every 5 s cost more than the rest of the daemon. The instance's storages keep no state
between reads (each read opens its own connection; PostgreSQL's engines use no pool), so one instance per
instance ref serves every tick. `context.instance_ref` is a plain property, not marked `@public`: its canary is in
tests/orchestration/sensors/test_sensor_instance.py.
"""

from __future__ import annotations

import threading

from dagster import DagsterInstance, SensorEvaluationContext, serialize_value

_OPEN: dict[str, DagsterInstance] = {}
_LOCK = threading.Lock()  # the code server evaluates sensors on a thread pool


def tick_instance(context: SensorEvaluationContext) -> DagsterInstance:
    """The instance of `context`: its own where it was given one (a test's `build_sensor_context`), else the
    process's instance for its ref, opened on the first tick."""
    ref = context.instance_ref
    if ref is None:
        return context.instance
    key = serialize_value(ref)
    with _LOCK:
        instance = _OPEN.get(key)
        if instance is None:
            instance = _OPEN[key] = DagsterInstance.from_ref(ref)
        return instance
