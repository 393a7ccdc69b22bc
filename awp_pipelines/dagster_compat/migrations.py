"""Dagster's migration scripts read once in the forkserver (alembic's ScriptDirectory replaced inside Dagster's
private SQL module, there only)."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from alembic.script import ScriptDirectory


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
    try:  # a speed-up only: without Dagster's names (renamed upstream) each step reads them, as before
        from dagster._core.storage import sql as dagster_sql
        from dagster._core.storage.sql import get_alembic_config
    except ImportError:
        return
    if not hasattr(dagster_sql, "ScriptDirectory"):
        return
    dagster_sql.ScriptDirectory = _MigrationsReadOnce  # type: ignore[misc,assignment]
    with contextlib.suppress(Exception):  # a failure leaves each step to read them, as before
        _MigrationsReadOnce.from_config(get_alembic_config(dagster_sql.__file__)).as_revision_number("head")
