"""Every use of Dagster's internals, in one module: what a Dagster upgrade may break is here and nowhere else
(tests/test_storage_boundary.py holds it).

- Event queries: a packet run's Attempt events read from the event-log table by its run-id index, the
  stored serdes JSON decoded here (SQL storages); a run's event records, newest or by page.
- A key-value store: the run storage's key-value table (`set_cursor_values`), for the accounts' cooldowns
  and usage, the user's stops and the Attempt claims (a unique insert, then compare-and-set).
- Pool slots: Dagster's global concurrency pools, created, claimed, freed, and their holders listed.
- Run tags Dagster owns, and the few internal classes and functions the runner and the builder need.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import multiprocessing
import multiprocessing.forkserver
import os
import weakref
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dagster import (
    AssetKey,
    AssetMaterialization,
    Config,
    DagsterEvent,
    DagsterEventType,
    DagsterInstance,
    DagsterRunStatus,
    EventLogRecord,
    Executor,
    ExecutorDefinition,
    Field,
    InitExecutorContext,
    Selector,
    executor,
)
from dagster._core.definitions.definition_config_schema import DefinitionConfigSchema
from dagster._core.definitions.executor_definition import (
    IN_PROC_CONFIG,
    MULTI_PROC_CONFIG,
    _core_in_process_executor_creation,
    _core_multiprocess_executor_creation,
    multiple_process_executor_requirements,
)
from dagster._core.definitions.reconstruct import ReconstructableJob, build_reconstructable_job
from dagster._core.definitions.unresolved_asset_job_definition import UnresolvedAssetJobDefinition
from dagster._core.events import RunFailureReason, StepMaterializationData
from dagster._core.execution import compute_logs
from dagster._core.execution.api import execute_run
from dagster._core.execution.execution_result import ExecutionResult
from dagster._core.instance.ref import InstanceRef
from dagster._core.storage.tags import REPOSITORY_LABEL_TAG, ROOT_RUN_ID_TAG, SENSOR_NAME_TAG
from dagster._core.utils import make_new_run_id
from dagster._serdes import deserialize_value, serialize_value

# SQLAlchemy and Dagster's SQL storages (with alembic) are imported by the functions that query: loading the
# code location needs none of them (about 0.1 s and 11 MB of the load of 200 packets).
if TYPE_CHECKING:
    import sqlalchemy as sa
    from alembic.script import ScriptDirectory
    from dagster._core.storage.event_log.sql_event_log import SqlEventLogStorage
    from dagster._core.storage.runs.sql_run_storage import SqlRunStorage

__all__ = [
    "ROOT_RUN_ID_TAG", "SENSOR_NAME_TAG", "ExecutionResult", "InstanceRef", "RunFailureReason",
    "UnresolvedAssetJobDefinition", "build_reconstructable_job", "compute_logs", "execute_run", "make_new_run_id",
]

# The code location of workspace.yaml: runs tagged with it show under the job in the UI.
REPOSITORY_TAG = {REPOSITORY_LABEL_TAG: "__repository__@awp_pipelines"}
# The embedded instance's run coordinator (dagster.yaml): runs start when launched, daemon or not.
DEFAULT_RUN_COORDINATOR = ("dagster._core.run_coordinator", "DefaultRunCoordinator")
# The run statuses of a run that has not ended (SUSPENDED aside: nothing of AWP's is ever suspended).
UNFINISHED = [DagsterRunStatus.QUEUED, DagsterRunStatus.NOT_STARTED, DagsterRunStatus.STARTING,
              DagsterRunStatus.STARTED, DagsterRunStatus.CANCELING]
# One event-log database for every run of the embedded instance (module, class), for its dagster.yaml.
CONSOLIDATED_EVENT_LOG = ("dagster._core.storage.event_log", "ConsolidatedSqliteEventLogStorage")

RECORD_EVENTS = frozenset({DagsterEventType.ASSET_MATERIALIZATION, DagsterEventType.ASSET_OBSERVATION})


def plain_value(value: object) -> object:
    """A stored metadata entry as its plain Python value."""
    return getattr(value, "value", value) if value is not None else None


# --- Event queries ---------------------------------------------------------------------------------------

AttemptEvent = tuple[str, AssetKey, dict[str, object]]  # run id, asset key, metadata as plain values
_CHUNK = 500  # run ids per query


def attempt_events(instance: DagsterInstance, run_ids: Sequence[str],
                   keys: Mapping[AssetKey, str]) -> list[AttemptEvent]:
    """The Attempt events (materializations, observations) of these runs on the packet's assets: runs in the
    order given, each run's events in order. SQL storages (SQLite, Postgres) answer in one indexed query by
    run id per 500 runs, decoding only the metadata; others are read run by run."""
    from dagster._core.storage.event_log.sql_event_log import SqlEventLogStorage

    storage = instance.event_log_storage
    if isinstance(storage, SqlEventLogStorage):
        return _events_by_sql(storage, run_ids, keys)
    return events_by_run(instance, run_ids, keys)


def events_by_run(instance: DagsterInstance, run_ids: Sequence[str],
                  keys: Mapping[AssetKey, str]) -> list[AttemptEvent]:
    """As `attempt_events`, through Dagster's public per-run API (any storage)."""
    found: list[AttemptEvent] = []
    for run_id in run_ids:
        for entry in instance.all_logs(run_id, of_type=set(RECORD_EVENTS)):
            event = entry.dagster_event
            data = event.event_specific_data if event else None
            payload = getattr(data, "materialization", None) or getattr(data, "asset_observation", None)
            key = event.asset_key if event is not None else None
            if key is not None and payload is not None and key in keys:
                found.append((run_id, key, {k: plain_value(v) for k, v in payload.metadata.items()}))
    return found


def _events_by_sql(storage: SqlEventLogStorage, run_ids: Sequence[str],
                   keys: Mapping[AssetKey, str]) -> list[AttemptEvent]:
    """Dagster's own event table, read by its run-id index; asset events live in the index shard on SQLite.
    Decoding the stored JSON ourselves skips Dagster's object rebuild, the bulk of the cost on long runs."""
    from dagster._core.storage.event_log.schema import SqlEventLogStorageTable as table
    from dagster._core.storage.sqlalchemy_compat import db_select

    by_string = {key.to_string(): key for key in keys}
    order = {run_id: index for index, run_id in enumerate(run_ids)}
    rows: list[Any] = []
    for start in range(0, len(run_ids), _CHUNK):
        query = (db_select([table.c.id, table.c.run_id, table.c.asset_key, table.c.event])
                 .where(table.c.run_id.in_(run_ids[start:start + _CHUNK]))
                 .where(table.c.dagster_event_type.in_([t.value for t in RECORD_EVENTS]))
                 .where(table.c.asset_key.in_(list(by_string))))
        with storage.index_connection() as conn:
            rows.extend(conn.execute(query).fetchall())
    rows.sort(key=lambda row: (order[row.run_id], row.id))
    return [(row.run_id, by_string[row.asset_key], _stored_metadata(row.event)) for row in rows]


def _stored_metadata(event_json: str) -> dict[str, object]:
    """An asset event's metadata from its stored JSON (Dagster's serdes form: a list of entries, each value
    in `entry_data` under its one field: `text`, `value`, `data`, `md_str`, `path`, …)."""
    event = json.loads(event_json)["dagster_event"]["event_specific_data"]
    payload = event.get("materialization") or event.get("asset_observation") or {}
    meta: dict[str, object] = {}
    for entry in payload.get("metadata_entries") or []:
        fields = [v for k, v in (entry.get("entry_data") or {}).items() if k != "__class__"]
        meta[entry["label"]] = fields[0] if len(fields) == 1 else None
    return meta


def run_event_page(instance: DagsterInstance, run_id: str, cursor: str | None,
                   limit: int = 1000) -> tuple[list[EventLogRecord], str, bool]:
    """One page of a run's event records, oldest first: the records, the next cursor, whether more follow."""
    page = instance.event_log_storage.get_records_for_run(run_id, cursor=cursor, limit=limit)
    return list(page.records), page.cursor, page.has_more


def latest_event_time(instance: DagsterInstance, run_id: str) -> float | None:
    records = instance.event_log_storage.get_records_for_run(run_id, limit=1, ascending=False).records
    return records[0].timestamp if records else None


def report_materialization(instance: DagsterInstance, run_id: str, job_name: str,
                           materialization: AssetMaterialization) -> None:
    """Store a materialization in a run's event log from outside its steps (an ended run's log still takes
    events)."""
    instance.report_dagster_event(
        DagsterEvent(event_type_value=DagsterEventType.ASSET_MATERIALIZATION.value, job_name=job_name,
                     event_specific_data=StepMaterializationData(materialization)),
        run_id=run_id)


# --- The key-value store ---------------------------------------------------------------------------------

def kv_get(instance: DagsterInstance, keys: set[str]) -> dict[str, str]:
    """The stored values of `keys` (absent ones left out)."""
    return dict(instance.run_storage.get_cursor_values(keys))


def kv_set(instance: DagsterInstance, values: Mapping[str, str]) -> None:
    instance.run_storage.set_cursor_values(dict(values))


def _sql_run_storage(instance: DagsterInstance) -> SqlRunStorage:
    from dagster._core.storage.runs.sql_run_storage import SqlRunStorage

    storage = instance.run_storage
    if not isinstance(storage, SqlRunStorage):  # pragma: no cover - every shipped instance is SQL
        raise TypeError(f"claims need a SQL run storage, not {type(storage).__name__}")
    return storage


def kv_insert(instance: DagsterInstance, key: str, value: str) -> bool:
    """Insert `key` only if it is not there: of two processes doing it at once (any hosts, SQLite or
    PostgreSQL), one wins (the key is unique). Whether this one did."""
    import sqlalchemy as sa
    from dagster._core.storage.runs.schema import KeyValueStoreTable

    with _sql_run_storage(instance).connect() as conn:
        try:
            conn.execute(KeyValueStoreTable.insert().values(key=key, value=value))
            return True
        except sa.exc.IntegrityError:
            return False


def kv_value(instance: DagsterInstance, key: str) -> str:
    """The value of a key known to exist."""
    import sqlalchemy as sa
    from dagster._core.storage.runs.schema import KeyValueStoreTable as table

    with _sql_run_storage(instance).connect() as conn:
        return str(conn.execute(sa.select(table.c.value).where(table.c.key == key)).scalar_one())


def kv_swap(instance: DagsterInstance, key: str, old: str, new: str) -> bool:
    """Compare-and-set: `key` becomes `new` only if it still holds `old`. Whether it did."""
    from dagster._core.storage.runs.schema import KeyValueStoreTable as table

    with _sql_run_storage(instance).connect() as conn:
        taken = conn.execute(table.update().where(table.c.key == key, table.c.value == old).values(value=new))
    return bool(taken.rowcount == 1)


def kv_prefixed(instance: DagsterInstance, prefix: str) -> dict[str, str]:
    """Every key starting with `prefix`, with its value (e.g. the heartbeats of running computes)."""
    with _sql_run_storage(instance).connect() as conn:
        rows = conn.execute(prefixed_query(prefix, conn.dialect.name)).all()
    return {str(key): str(value) for key, value in rows}


def prefixed_query(prefix: str, dialect: str) -> sa.Select[Any]:
    """The keys starting with `prefix`. SQLite's LIKE ignores case, so it cannot use the key's index and
    scans the table, which keeps a stop per packet run ever stopped: there a range of the index
    (byte order) finds them. PostgreSQL's collation need not order a prefix's keys together: LIKE stays."""
    import sqlalchemy as sa
    from dagster._core.storage.runs.schema import KeyValueStoreTable as table

    query = sa.select(table.c.key, table.c.value)
    if dialect == "sqlite" and prefix:
        return query.where(table.c.key >= prefix, table.c.key < prefix[:-1] + chr(ord(prefix[-1]) + 1))
    escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return query.where(table.c.key.like(escaped + "%", escape="\\"))


def kv_delete(instance: DagsterInstance, keys: Sequence[str]) -> None:
    from dagster._core.storage.runs.schema import KeyValueStoreTable

    if keys:
        with _sql_run_storage(instance).connect() as conn:
            conn.execute(KeyValueStoreTable.delete().where(KeyValueStoreTable.c.key.in_(list(keys))))


# --- Op config ---------------------------------------------------------------------------------------------

class SharedConfigSchema(DefinitionConfigSchema, Mapping[str, Field]):
    """The op config schema Dagster infers from an argument `config: <Config class>`, inferred once for many
    assets. `multi_asset` takes a mapping of fields and converts it into a schema again for each asset (for a
    code location of 2,000 prompts, a tenth of its load); this is both, so Dagster keeps it as it is."""

    def __init__(self, config: type[Config]) -> None:
        super().__init__(config.to_config_schema().as_field())
        self._fields = config.to_fields_dict()

    def __getitem__(self, name: str) -> Field:
        return self._fields[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._fields)

    def __len__(self) -> int:
        return len(self._fields)


# --- Executors -------------------------------------------------------------------------------------------

def multi_or_in_process(name: str, multiprocess: Mapping[str, Any]) -> ExecutorDefinition:
    """Dagster's multi-or-in-process executor with AWP's multiprocess settings as its default: run config
    `execution: {config: {in_process: {}}}` runs the steps in the run worker's own process, and so does a
    daemonic process (a Celery prefork child), which may not start step processes."""

    @executor(name=name, config_schema=Field(Selector({"multiprocess": MULTI_PROC_CONFIG,
                                                       "in_process": IN_PROC_CONFIG}),
                                             default_value={"multiprocess": dict(multiprocess)}),
              requirements=lambda config: multiple_process_executor_requirements() if "multiprocess" in config
              else [])
    def _executor(init_context: InitExecutorContext) -> Executor:
        config = init_context.executor_config
        if "multiprocess" in config and not multiprocessing.current_process().daemon:
            multi: Mapping[str, Any] = config["multiprocess"]  # type: ignore[assignment]
            start: Mapping[str, Any] = multi.get("start_method") or {}
            if "forkserver" in start:
                start_step_server((start["forkserver"] or {}).get("preload_modules") or [], init_context.job)
            return _core_multiprocess_executor_creation(config["multiprocess"])  # type: ignore[arg-type]
        chosen = config.get("in_process") or {"retries": config["multiprocess"]["retries"]}  # type: ignore[index]
        return _core_in_process_executor_creation(chosen)  # type: ignore[arg-type]

    return _executor


# What a step process imports only once it opens the instance and starts its step (Dagster imports them lazily;
# ~25 ms of CPU each step): the forkserver imports them first (a name gone in another Dagster is skipped).
STEP_IMPORTS = ["dagster._core.instance.factory", "dagster._core.storage.legacy_storage",
                "dagster._core.storage.local_compute_log_manager", "dagster._core.storage.root",
                "dagster._core.secrets.env_file", "dagster._core.storage.defs_state.blob_storage_state_storage",
                "upath.implementations.local", "fsspec.implementations.local",
                "dagster._core.system_config.composite_descent", "watchdog.observers.polling"]

# The job a forkserver builds before it forks the step processes (a serialized ReconstructableJob): set only
# while the forkserver starts, and read (and dropped) by step_preload.py in it.
PRELOAD_JOB_ENV = "AWP_PRELOAD_JOB"
_MAX_ENV = 100_000  # Linux refuses a variable over 128 KiB (a selection of thousands of assets): no preload then


def start_step_server(preload: Sequence[str], job: object) -> None:
    """Start this process's forkserver now (Dagster starts it at the first step otherwise), importing `preload`
    and building `job` before it forks a step: each step then finds the job built instead of loading and
    compiling the packet again. One forkserver serves the process for good: a later run of another job finds
    it running, and its steps build their own job, as without it."""
    text = serialize_value(job) if isinstance(job, ReconstructableJob) else ""
    if not text or len(text) > _MAX_ENV:
        return
    multiprocessing.get_context("forkserver").set_forkserver_preload(
        ["dagster._core.executor.multiprocess", *preload])  # the list Dagster's executor would set
    before = os.environ.get(PRELOAD_JOB_ENV)
    os.environ[PRELOAD_JOB_ENV] = text  # the forkserver inherits the environment it starts with
    try:
        multiprocessing.forkserver.ensure_running()
    finally:
        if before is None:
            os.environ.pop(PRELOAD_JOB_ENV, None)
        else:
            os.environ[PRELOAD_JOB_ENV] = before


class _MigrationsReadOnce:
    """alembic's ScriptDirectory, read once per script folder: Dagster checks a database's schema revision
    against the migration scripts at every opening of a storage, and alembic reads and executes every script
    file again each time (~30 ms of CPU per instance a step process opens, ~6 ms once read)."""

    _read: dict[str, ScriptDirectory] = {}

    @classmethod
    def from_config(cls, config: Any) -> ScriptDirectory:
        from alembic.script import ScriptDirectory

        location = str(config.get_main_option("script_location"))
        if location not in cls._read:
            cls._read[location] = ScriptDirectory.from_config(config)
        return cls._read[location]


def read_migrations_once() -> None:
    """In the forkserver: Dagster's revision check reads the migration scripts once, there, and each step
    forked from it finds them read. Only there: the scripts cannot change under a step, which never migrates."""
    from dagster._core.storage import sql as dagster_sql
    from dagster._core.storage.sql import get_alembic_config

    dagster_sql.ScriptDirectory = _MigrationsReadOnce  # type: ignore[misc,assignment]
    with contextlib.suppress(Exception):  # a failure leaves each step to read them, as before
        _MigrationsReadOnce.from_config(get_alembic_config(dagster_sql.__file__)).as_revision_number("head")


def build_preloaded_job() -> None:
    """In the forkserver: build the job `start_step_server` named, so each step forked from it has it (Dagster
    keeps the last job a process built; the packet's reconstructor keeps its own). The variable goes first:
    the agents the steps start have no use for it."""
    text = os.environ.pop(PRELOAD_JOB_ENV, None)
    if text:
        # Any failure is the step's to report: it builds the job itself, as without the forkserver's, and the
        # forkserver must not die of it (it would fail every step of the run).
        with contextlib.suppress(Exception):
            deserialize_value(text, ReconstructableJob).get_definition()


# --- Pool slots ------------------------------------------------------------------------------------------

def pools_supported(instance: DagsterInstance) -> bool:
    return bool(instance.event_log_storage.supports_global_concurrency_limits)


@contextmanager
def _pools_lock(instance: DagsterInstance) -> Iterator[None]:
    lock_file = Path(instance.root_directory) / ".awp-pools.lock"
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    with lock_file.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


# Pools this process saw exist, per instance: a pool is made once and never removed by AWP, so each Attempt
# does not ask again (a storage round trip per lease). A claim that fails forgets it (claim_slot): the next
# ensure_pool asks, in case someone deleted it.
_KNOWN_POOLS: weakref.WeakKeyDictionary[DagsterInstance, set[str]] = weakref.WeakKeyDictionary()


def ensure_pool(instance: DagsterInstance, pool: str, limit: int = 1) -> None:
    """Create the pool once. Creating it counts its slots, then inserts: on SQLite (no row locks) two
    processes doing it at once would make two slots, so the instance folder's lock serialises it."""
    known = _KNOWN_POOLS.setdefault(instance, set())
    if pool in known:
        return
    storage = instance.event_log_storage
    if pool not in storage.get_concurrency_keys():
        with _pools_lock(instance):
            if pool not in storage.get_concurrency_keys():
                storage.set_concurrency_slots(pool, limit)
    known.add(pool)


def claim_slot(instance: DagsterInstance, pool: str, run_id: str, holder: str) -> bool:
    """Dagster's claim selects a free slot, then takes it; on SQLite nothing locks the row in between, so
    two processes took one slot (seen in the daemon test). The instance folder's lock makes it one step.
    A pool nobody holds or waits for is claimed in one transaction (`_claim_idle`); else Dagster's claim
    queues this holder behind the others (five transactions: queue, assign, check, claim)."""
    from dagster._core.storage.event_log.sql_event_log import SqlEventLogStorage

    storage = instance.event_log_storage
    with _pools_lock(instance):
        claimed = isinstance(storage, SqlEventLogStorage) and _claim_idle(storage, pool, run_id, holder)
        claimed = claimed or bool(storage.claim_concurrency_slot(pool, run_id, holder).is_claimed)
    if not claimed:
        _KNOWN_POOLS.get(instance, set()).discard(pool)
    return claimed


def _claim_idle(storage: SqlEventLogStorage, pool: str, run_id: str, holder: str) -> bool:
    """Claim a slot of `pool` if no step holds or waits for one (no row of the pool in the queue): the slot
    taken by compare-and-set (its step still empty), and the queue row Dagster's own claim leaves (assigned),
    so a holder looks the same to every reader (the UI, run monitoring, slot_holders). Whether it did."""
    import sqlalchemy as sa
    from dagster._core.storage.event_log.schema import ConcurrencySlotsTable as slots
    from dagster._core.storage.event_log.schema import PendingStepsTable as queue
    from dagster._core.storage.sqlalchemy_compat import db_select

    with storage.index_connection() as conn:
        if conn.execute(db_select([queue.c.id]).where(queue.c.concurrency_key == pool).limit(1)).fetchone():
            return False
        free = conn.execute(db_select([slots.c.id]).where(
            slots.c.concurrency_key == pool, slots.c.step_key.is_(None), slots.c.deleted.is_(False)).limit(1)
        ).fetchone()
        if free is None:
            return False
        taken = conn.execute(slots.update().where(slots.c.id == free[0], slots.c.step_key.is_(None))
                             .values(run_id=run_id, step_key=holder)).rowcount
        if taken != 1:
            return False
        conn.execute(queue.insert().values(concurrency_key=pool, run_id=run_id, step_key=holder, priority=0,
                                           assigned_timestamp=sa.func.now()))
        return True


def free_slot(instance: DagsterInstance, run_id: str, holder: str) -> None:
    from dagster._core.storage.event_log.sql_event_log import SqlEventLogStorage

    storage = instance.event_log_storage
    if isinstance(storage, SqlEventLogStorage):
        _free_in_one(storage, run_id, holder)
    else:
        storage.free_concurrency_slot_for_step(run_id, holder)


def _free_in_one(storage: SqlEventLogStorage, run_id: str, holder: str) -> None:
    """Dagster's `free_concurrency_slot_for_step` in one transaction, not three: the holder's slots freed
    (those of a lowered limit deleted), its queue rows removed, and for each pool where it was assigned the
    next waiter assigned (highest priority, then oldest)."""
    import sqlalchemy as sa
    from dagster._core.storage.event_log.schema import ConcurrencySlotsTable as slots
    from dagster._core.storage.event_log.schema import PendingStepsTable as queue
    from dagster._core.storage.sqlalchemy_compat import db_select

    with storage.index_connection() as conn:
        conn.execute(slots.delete().where(slots.c.run_id == run_id, slots.c.step_key == holder,
                                          slots.c.deleted.is_(True)))
        conn.execute(slots.update().where(slots.c.run_id == run_id, slots.c.step_key == holder)
                     .values(run_id=None, step_key=None))
        rows = conn.execute(db_select([queue.c.id, queue.c.assigned_timestamp, queue.c.concurrency_key])
                            .where(queue.c.run_id == run_id, queue.c.step_key == holder).with_for_update()
                            ).fetchall()
        if not rows:
            return
        conn.execute(queue.delete().where(queue.c.id.in_([row[0] for row in rows])))
        for pool in {row[2] for row in rows if row[1] is not None}:
            waiter = conn.execute(db_select([queue.c.id])
                                  .where(queue.c.concurrency_key == pool, queue.c.assigned_timestamp.is_(None))
                                  .order_by(queue.c.priority.desc(), queue.c.create_timestamp.asc()).limit(1)
                                  ).fetchone()
            if waiter:
                conn.execute(queue.update().where(queue.c.id == waiter[0]).values(assigned_timestamp=sa.func.now()))


def free_run_slots(instance: DagsterInstance, run_id: str) -> None:
    """Every slot and queue entry the run holds."""
    if pools_supported(instance):
        instance.event_log_storage.free_concurrency_slots_for_run(run_id)


def slot_holders(instance: DagsterInstance) -> set[str]:
    """The runs that hold a pool slot, or an entry of a pool's queue (a pending step counts too: a step that
    ends frees its slot, then, in a second transaction, its queue entry; a kill between the two leaves an
    assigned entry that no slot backs, and it holds the pool all the same)."""
    if not pools_supported(instance):
        return set()
    # One read for every pool (the queue's run ids: a claimed slot always has its queue row, assigned, from
    # Dagster's claim and from _claim_idle alike), not two per pool.
    return {run_id for run_id in instance.event_log_storage.get_concurrency_run_ids() if run_id}


def claimed_slots(instance: DagsterInstance, pool: str) -> list[str]:
    """The run ids holding the pool's slots."""
    return [slot.run_id for slot in instance.event_log_storage.get_concurrency_info(pool).claimed_slots]


def stamp_consolidated_event_log(instance: DagsterInstance) -> None:
    """Dagster's consolidated SQLite event log creates its tables but never commits its alembic stamp (the
    connection closes uncommitted): stamped here, or a migration would not know the schema is current."""
    import sqlalchemy as sa
    from dagster._core.storage.event_log.sqlite import consolidated_sqlite_event_log
    from dagster._core.storage.event_log.sqlite.consolidated_sqlite_event_log import (
        ConsolidatedSqliteEventLogStorage,
    )
    from dagster._core.storage.sql import get_alembic_config, stamp_alembic_rev

    storage = instance.event_log_storage
    if not isinstance(storage, ConsolidatedSqliteEventLogStorage):
        return
    with storage.index_connection() as conn:  # commits when the block ends
        if conn.execute(sa.text("SELECT count(*) FROM alembic_version")).scalar():
            return
        stamp_alembic_rev(get_alembic_config(consolidated_sqlite_event_log.__file__), conn)
