"""Event queries: a packet run's Attempt events read from the event-log table by its run-id index, the stored serdes
JSON decoded here (SQL storages); a run's event records, newest or by page; a materialization reported into an ended
run's log."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from dagster import (
    AssetKey,
    AssetMaterialization,
    AssetObservation,
    DagsterEvent,
    DagsterEventType,
    DagsterInstance,
    EventLogRecord,
)

if TYPE_CHECKING:
    from dagster._core.storage.event_log.sql_event_log import SqlEventLogStorage


RECORD_EVENTS = frozenset({DagsterEventType.ASSET_MATERIALIZATION, DagsterEventType.ASSET_OBSERVATION})


def plain_value(value: object) -> object:
    """A stored metadata entry as its plain Python value."""
    return getattr(value, "value", value) if value is not None else None


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
    from dagster._core.events import StepMaterializationData

    instance.report_dagster_event(
        DagsterEvent(event_type_value=DagsterEventType.ASSET_MATERIALIZATION.value, job_name=job_name,
                     event_specific_data=StepMaterializationData(materialization)),
        run_id=run_id)


def report_observation(instance: DagsterInstance, run_id: str, job_name: str, observation: AssetObservation) -> None:
    """Store an observation (an Attempt's start marker) in a run's event log from outside its steps."""
    from dagster._core.events import AssetObservationData

    instance.report_dagster_event(
        DagsterEvent(event_type_value=DagsterEventType.ASSET_OBSERVATION.value, job_name=job_name,
                     event_specific_data=AssetObservationData(observation)),
        run_id=run_id)
