"""Which Dagster instance holds the ledger, and opening it: the embedded SQLite under `<packet>/.awp/dagster` that
`awp run` and the README's UI use unless told otherwise, and the one a reading command reads (`instance_to_read`).
The one module that decides which instance.

The embedded instance gets the concurrency the packets need: one agent per work tree (the repo pools,
limit 1) and one Attempt per account (lease pools, limit 1). Runs start as soon as they are launched (no
queue to wait on a daemon); the daemon is needed for the recovery sensors, which `dagster dev` starts.

Its event log is one SQLite database for every run (Dagster's consolidated event log), not one database per
run: each per-run database began with the empty schema (about 170 KiB), and every asset event was stored
twice, in the run's database and in the cross-run index. The concurrency pools live in the same database
(`supports_global_concurrency_limits`), so leases work as before.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import sqlite3
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy.exc
from dagster import DagsterInstance, SensorEvaluationContext, serialize_value
from dagster_postgres.utils import DagsterPostgresException

from awp_pipelines.dagster_compat.embedded_instance import (
    CONSOLIDATED_EVENT_LOG,
    DEFAULT_RUN_COORDINATOR,
    instance_from_folder,
    stamp_consolidated_event_log,
)

# The pools and run handling of the embedded instance; alone, the whole config of instances made before the
# consolidated event log (their event log is one database per run). New ones get embedded_config(folder).
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

_EVENTS = f"""\
# One event-log database for every run (not one per run); Dagster needs its folder as an absolute path,
# which AWP rewrites when it opens a moved instance folder.
event_log_storage:
  module: {CONSOLIDATED_EVENT_LOG[0]}
  class: {CONSOLIDATED_EVENT_LOG[1]}
  config:
    base_dir: {{base_dir}}
"""
_BASE_DIR = re.compile(r"^    base_dir: (.+)$", re.MULTILINE)


def events_folder(folder: Path) -> Path:
    return folder / "history" / "events"


def embedded_config(folder: Path) -> str:
    """The dagster.yaml of a new embedded instance in `folder` (absolute): pools, and one event-log database."""
    return EMBEDDED_CONFIG + _EVENTS.format(base_dir=json.dumps(str(events_folder(folder.resolve()))))


def _config_to_write(folder: Path, current: str | None) -> str | None:
    """What open_instance_folder writes: a new instance's config; the pools for one of the earliest (its
    event log stays per run: switching would hide its runs' events); the folder's own path for a moved
    embedded instance. None: the config is used as it is (the user's, e.g. Postgres, or already right)."""
    if current is None:
        return embedded_config(folder)
    if current == _EARLIER_CONFIG:
        return EMBEDDED_CONFIG
    found = _BASE_DIR.search(current)
    if found and current != embedded_config(folder):
        old = Path(json.loads(found.group(1))).parent.parent
        if current == embedded_config(old):  # written by AWP for another place: the folder was moved
            return embedded_config(folder)
    return None


def instance_home(packet_root: Path, home: Path | None = None) -> Path:
    """Where `awp run` keeps the packet's instance: `home`, else AWP_DAGSTER_HOME, else `<packet>/.awp/dagster`."""
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


def open_instance_folder(folder: Path) -> DagsterInstance:
    """The instance stored in `folder`. A folder without a dagster.yaml gets the embedded SQLite config; one
    with a dagster.yaml (e.g. Postgres storage) is used as it is. Safe to call from many processes at once."""
    folder = folder.resolve()
    with instance_folder_lock(folder):
        config = folder / "dagster.yaml"
        # Also upgrades the config earlier versions wrote (telemetry only: no pools, so no one-agent-per-tree).
        new = not config.exists()
        text = _config_to_write(folder, config.read_text(encoding="utf-8") if config.exists() else None)
        if text is not None:
            # Written whole, then renamed: no process ever reads half a config.
            partial = folder / f".dagster.yaml.{os.getpid()}"
            partial.write_text(text, encoding="utf-8")
            partial.replace(config)
        instance = instance_from_folder(folder)
        stamp_consolidated_event_log(instance)
        if new:
            small_pages(folder)
        return instance


# SQLite's page for a new embedded instance's databases. Dagster stores each event as 1-12 KB of JSON; at
# SQLite's default 4 KiB a check evaluation's row in `asset_check_executions` (about 2.2 KB) fills a page of
# its own, and each of the ~40 tables and indexes starts with one. The demo (5 Attempts) at 1 KiB: 445 KB of
# growth instead of 500, 91 KB for the empty instance instead of 318.
SQLITE_PAGE_SIZE = 1024


def small_pages(folder: Path) -> None:
    """Rebuild the new, still empty, databases of an embedded instance with SQLITE_PAGE_SIZE pages. A page size
    changes only when a database is rebuilt (VACUUM), and not in WAL mode: left as each database had it."""
    for path in sorted(folder.rglob("*.db")):
        with contextlib.closing(sqlite3.connect(path)) as conn:
            mode = str(conn.execute("PRAGMA journal_mode").fetchone()[0])
            if int(conn.execute("PRAGMA page_size").fetchone()[0]) == SQLITE_PAGE_SIZE:
                continue
            conn.execute("PRAGMA journal_mode=DELETE")
            conn.execute(f"PRAGMA page_size={SQLITE_PAGE_SIZE}")
            conn.execute("VACUUM")
            conn.execute(f"PRAGMA journal_mode={mode}")


_INSTANCE_FILES = ("dagster.yaml", "history")


@dataclass(frozen=True)
class ChosenInstance:
    home: Path
    why: str

    def line(self) -> str:
        return f"instance: {self.home} ({self.why})"


def instance_to_read(packet_root: Path, explicit: Path | None) -> ChosenInstance:
    """Which instance a reading command (`awp status`, `awp watch`, `awp accounts`) reads, and why, said on its
    first line. `--instance` (or AWP_DAGSTER_HOME) first; else DAGSTER_HOME, the `dagster` CLI's variable, when it
    holds an instance (its dagster.yaml, or the history an instance without one keeps): on a deployment's hosts
    that is where the runs are; else the packet's embedded instance (where `awp run` stores them). A DAGSTER_HOME
    passed over is named in the line, so no read is silently of another instance."""
    if explicit is not None:
        return ChosenInstance(explicit, "--instance or AWP_DAGSTER_HOME")
    dagster_home = os.environ.get("DAGSTER_HOME", "").strip()
    if dagster_home and any((Path(dagster_home) / name).exists() for name in _INSTANCE_FILES):
        return ChosenInstance(Path(dagster_home), "DAGSTER_HOME, as the dagster CLI reads it")
    embedded = instance_home(packet_root)
    if dagster_home:
        return ChosenInstance(embedded, f"the packet's embedded instance: DAGSTER_HOME={dagster_home} holds none")
    return ChosenInstance(embedded, "the packet's embedded instance; DAGSTER_HOME is not set")


def instance_to_serve(packet: Path, explicit: Path | None) -> Path:
    """Which instance `awp serve` shows: `--instance` (or AWP_DAGSTER_HOME), else DAGSTER_HOME when set (the
    webserver beside it reads that one), else the packet's embedded instance. The caller opens only one that holds
    a dagster.yaml: an empty instance is never created to serve nothing from."""
    if explicit is not None:
        return explicit
    dagster_home = os.environ.get("DAGSTER_HOME")
    return Path(dagster_home) if dagster_home else instance_home(packet.resolve())


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


# The instance a sensor tick reads, opened once per code-server process rather than once per tick. Under the daemon,
# each tick is a gRPC call to the code server, whose `context.instance` is a fresh `DagsterInstance.from_ref`:
# storages built, and on SQLite the alembic revision of each database checked by loading every migration script.
# That was most of the CPU of a tick (py-spy of the code server, bench/sensor_daemon_cpu.py). The storages keep no
# state between reads (each read opens its own connection; PostgreSQL's engines use no pool), so one instance per
# instance ref serves every tick. `context.instance_ref` is a plain property, not marked `@public`: its canary is in
# tests/ledger/test_tick_instance.py.
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
