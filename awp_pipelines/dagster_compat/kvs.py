"""A key-value store: the run storage's key-value table (`set_cursor_values`), for the accounts' cooldowns and
usage, the user's stops and the Attempt claims (a unique insert, then compare-and-set)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from dagster import DagsterInstance

if TYPE_CHECKING:
    import sqlalchemy as sa
    from dagster._core.storage.runs.sql_run_storage import SqlRunStorage


def kv_get(instance: DagsterInstance, keys: set[str]) -> dict[str, str]:
    """The stored values of `keys` (absent ones left out)."""
    return dict(instance.run_storage.get_cursor_values(keys))


def kv_set(instance: DagsterInstance, values: Mapping[str, str]) -> None:
    # One key per write: on SQLite, a batch with a key that exists updates it and silently drops the new ones
    # (SqlRunStorage.set_cursor_values, docs/upstream.md 9).
    for key, value in values.items():
        instance.run_storage.set_cursor_values({key: value})


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
