"""Open a Dagster instance folder safely when several processes open it at once.

A fresh SQLite instance is created by whoever opens it first: run, event-log and schedule storage each create
their tables and stamp alembic. Two processes doing that at once left `alembic_version` with two heads and
every later command failing (4 of 8 in the probe). An fcntl lock on a file in the folder serialises the
opening (config written, storages created and stamped) between processes on this machine; it is held only
while `DagsterInstance.from_ref` runs, so opening an existing instance waits for no more than that.

Not covered: processes on different machines sharing one Postgres database (no shared folder to lock).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from dagster import DagsterInstance
from dagster._core.instance.ref import InstanceRef

INIT_LOCK = ".awp-instance.lock"
EMBEDDED_CONFIG = "telemetry:\n  enabled: false\n"


@contextlib.contextmanager
def instance_folder_lock(folder: Path) -> Iterator[None]:
    """Exclusive between processes for one instance folder; released when the block ends or the process dies."""
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / INIT_LOCK, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def open_instance_folder(folder: Path, default_config: str = EMBEDDED_CONFIG) -> DagsterInstance:
    """The instance stored in `folder`. A folder without a dagster.yaml gets `default_config` (embedded SQLite);
    one with a dagster.yaml (e.g. Postgres storage) is used as it is. Safe to call from many processes at once."""
    folder = folder.resolve()
    with instance_folder_lock(folder):
        config = folder / "dagster.yaml"
        if not config.exists():
            # Written whole, then renamed: no process ever reads half a config.
            partial = folder / f".dagster.yaml.{os.getpid()}"
            partial.write_text(default_config, encoding="utf-8")
            partial.replace(config)
        return DagsterInstance.from_ref(InstanceRef.from_dir(str(folder)))
