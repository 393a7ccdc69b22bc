"""The embedded instance's Dagster parts: the run coordinator and the consolidated SQLite event log named in its
dagster.yaml, its alembic stamp, and an instance opened from its folder."""

from __future__ import annotations

from pathlib import Path

from dagster import DagsterInstance

# The embedded instance's run coordinator (dagster.yaml): runs start when launched, daemon or not.
DEFAULT_RUN_COORDINATOR = ("dagster._core.run_coordinator", "DefaultRunCoordinator")


# One event-log database for every run of the embedded instance (module, class), for its dagster.yaml.
CONSOLIDATED_EVENT_LOG = ("dagster._core.storage.event_log", "ConsolidatedSqliteEventLogStorage")


def instance_from_folder(folder: Path) -> DagsterInstance:
    """The instance whose dagster.yaml is in `folder`."""
    return DagsterInstance.from_config(str(folder))


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
