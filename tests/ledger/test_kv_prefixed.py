"""The key-value store's prefix read (heartbeats): exactly the keys with the prefix, found by the key's index on
SQLite, so a tick does not scan the stops every past packet run left in the table."""

from __future__ import annotations

from pathlib import Path

import pytest
from dagster import DagsterInstance

from awp_pipelines.dagster_compat.kvs import kv_prefixed, kv_set, prefixed_query
from awp_pipelines.orchestration.ledger.instance import open_instance_folder

PREFIX = "awp/heartbeat/"


@pytest.fixture
def instance(tmp_path: Path) -> DagsterInstance:
    opened = open_instance_folder(tmp_path / "home")
    yield opened
    opened.dispose()


def test_only_the_keys_with_the_prefix_in_its_exact_case(instance: DagsterInstance) -> None:
    kv_set(instance, {PREFIX + "a": "1", PREFIX + "b/c": "2", "awp/heartbeat0": "x", "AWP/HEARTBEAT/d": "x",
                      "awp/heartbeaT/e": "x", "awp/heartbeat": "x", "awp/stop/pr-1": "x", PREFIX + "\u00e9": "3"})
    assert kv_prefixed(instance, PREFIX) == {PREFIX + "a": "1", PREFIX + "b/c": "2", PREFIX + "\u00e9": "3"}
    kv_set(instance, {"a_b%c/1": "1", "aXbYc/2": "x"})  # LIKE's wildcards in a prefix are plain characters
    assert kv_prefixed(instance, "a_b%c/") == {"a_b%c/1": "1"}


def test_the_sqlite_query_searches_the_key_index_instead_of_scanning_the_table(instance: DagsterInstance) -> None:
    kv_set(instance, {f"awp/stop/pr-{i}": "x" for i in range(50)})
    with instance.run_storage.connect() as conn:  # type: ignore[attr-defined]
        sql = prefixed_query(PREFIX, conn.dialect.name).compile(dialect=conn.dialect,
                                                                compile_kwargs={"literal_binds": True})
        plan = " ".join(str(row[-1]) for row in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}"))
    assert "SEARCH kvs USING" in plan and "SCAN kvs" not in plan, plan


def test_a_write_of_an_existing_and_a_new_key_stores_both(instance: DagsterInstance) -> None:
    """Dagster's SQLite store drops the new keys of such a batch (docs/upstream.md 9); kv_set must not."""
    kv_set(instance, {"awp/test/old": "1"})
    kv_set(instance, {"awp/test/old": "2", "awp/test/new": "1"})
    assert kv_prefixed(instance, "awp/test/") == {"awp/test/old": "2", "awp/test/new": "1"}
