"""The Dagster instance `awp run` and the README's UI use: embedded SQLite under `<packet>/.awp/dagster`
unless told otherwise.

The embedded instance gets the concurrency the packets need: one agent per work tree (the repo pools,
limit 1) and one Attempt per account (lease pools, limit 1). Runs start as soon as they are launched (no
queue to wait on a daemon); the daemon is needed for the recovery sensors, which `dagster dev` starts.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

import sqlalchemy.exc
from dagster import DagsterInstance
from dagster_postgres.utils import DagsterPostgresException

from awp_pipelines.orchestration.storage import DEFAULT_RUN_COORDINATOR, InstanceRef

EMBEDDED_CONFIG = f"""\
# Written by AWP for the embedded instance (SQLite). Serve the UI with the daemon on it:
#   DAGSTER_HOME=<this folder> dagster dev -w workspace.yaml
telemetry:
  enabled: false
# Runs start when launched, daemon or not: the UI works with the webserver alone, and the run says when
# no daemon is there to launch its retries, fallbacks and repairs.
run_coordinator:
  module: {DEFAULT_RUN_COORDINATOR[0]}
  class: {DEFAULT_RUN_COORDINATOR[1]}
concurrency:
  pools:
    # Prompts that share a work tree share a pool: one agent at a time edits it.
    default_limit: 1
run_monitoring:
  enabled: true
  # A run that died holding a pool slot gives it back (needs the daemon).
  free_slots_after_run_end_seconds: 30
"""


_EARLIER_CONFIG = "telemetry:\n  enabled: false\n"


def instance_home(packet_root: Path, home: Path | None = None) -> Path:
    if home is not None:
        return home
    env = os.environ.get("AWP_DAGSTER_HOME")
    return Path(env) if env else packet_root / ".awp" / "dagster"


INIT_LOCK = ".awp-instance.lock"


@contextlib.contextmanager
def instance_folder_lock(folder: Path) -> Iterator[None]:
    """Exclusive between processes for one instance folder; released when the block ends or the process dies.

    A fresh SQLite instance is created by whoever opens it first: each storage creates its tables and stamps
    alembic. Two processes doing that at once left `alembic_version` with two heads and every later command
    failing (4 of 8 in the probe). Not covered: machines sharing one Postgres database (no shared folder)."""
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
        # Also upgrades the config earlier versions wrote (telemetry only: no pools, so no one-agent-per-tree).
        if not config.exists() or config.read_text(encoding="utf-8") == _EARLIER_CONFIG:
            # Written whole, then renamed: no process ever reads half a config.
            partial = folder / f".dagster.yaml.{os.getpid()}"
            partial.write_text(default_config, encoding="utf-8")
            partial.replace(config)
        return DagsterInstance.from_ref(InstanceRef.from_dir(str(folder)))


def open_instance(packet_root: Path, home: Path | None = None) -> DagsterInstance:
    """A folder with a dagster.yaml (e.g. Postgres storage) is used as it is; an empty one becomes SQLite."""
    return open_instance_folder(instance_home(packet_root, home))


def hold_connections(instance: DagsterInstance) -> DagsterInstance:
    """For a command that asks many small questions (`awp status`): each storage keeps one open connection,
    as the webserver does, instead of connecting per query (Postgres; SQLite is unchanged)."""
    instance.optimize_for_webserver(statement_timeout=60_000, pool_recycle=3600, max_overflow=2)
    return instance


def storage_failure(err: BaseException) -> str | None:
    """One line saying how the instance's database failed, when `err` is (or was caused by) such a failure:
    a connection refused or dropped, retries given up. None for any other error."""
    chain: list[BaseException] = []
    cause: BaseException | None = err
    while cause is not None and cause not in chain:
        chain.append(cause)
        cause = cause.__cause__ or cause.__context__
    if not any(isinstance(e, DagsterPostgresException | sqlalchemy.exc.DBAPIError) for e in chain):
        return None
    deepest = next((e for e in reversed(chain) if str(e).strip()), err)
    return f"{type(deepest).__name__}: {str(deepest).strip().splitlines()[0]}"
