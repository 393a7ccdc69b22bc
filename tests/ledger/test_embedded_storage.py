"""The embedded instance's event log is one SQLite database for every run (Dagster's consolidated event log),
with the concurrency pools the leases use; an instance moved to another folder follows it; the instances of
earlier versions keep their per-run event logs (switching would hide their runs' events)."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from dagster._core.storage.event_log import ConsolidatedSqliteEventLogStorage, SqliteEventLogStorage

from awp_pipelines.orchestration.ledger.factory import ledger_of
from awp_pipelines.orchestration.ledger.instance import (
    _EARLIER_CONFIG,
    EMBEDDED_CONFIG,
    SQLITE_PAGE_SIZE,
    embedded_config,
    events_folder,
    open_instance_folder,
)
from awp_pipelines.orchestration.ledger.lease import leased


def test_a_new_instance_has_one_event_log_database_with_the_pools(tmp_path: Path) -> None:
    folder = tmp_path / "dagster"
    instance = open_instance_folder(folder)
    try:
        storage = instance.event_log_storage
        assert isinstance(storage, ConsolidatedSqliteEventLogStorage)
        assert storage.supports_global_concurrency_limits
        # A work-tree lease: pool repo_x_tree.
        with leased(ledger_of(instance), "run-a", "step", {"tree": "repo_x"}):
            assert not storage.claim_concurrency_slot("repo_x_tree", "run-b", "step").is_claimed
        assert storage.claim_concurrency_slot("repo_x_tree", "run-b", "step").is_claimed
    finally:
        instance.dispose()
    assert sorted(p.name for p in events_folder(folder).iterdir() if p.suffix == ".db") == ["event_log.db"]
    assert (folder / "dagster.yaml").read_text() == embedded_config(folder)
    with sqlite3.connect(events_folder(folder) / "event_log.db") as conn:  # migrations know where it stands
        assert len(conn.execute("select version_num from alembic_version").fetchall()) == 1


def test_a_moved_instance_folder_points_its_event_log_at_the_new_place(tmp_path: Path) -> None:
    open_instance_folder(tmp_path / "old").dispose()
    shutil.move(tmp_path / "old", tmp_path / "new")
    instance = open_instance_folder(tmp_path / "new")
    try:
        assert Path(instance.event_log_storage.get_db_path()).parent == events_folder((tmp_path / "new").resolve())
    finally:
        instance.dispose()
    assert (tmp_path / "new" / "dagster.yaml").read_text() == embedded_config(tmp_path / "new")
    assert not (tmp_path / "old").exists()


def test_an_earlier_instance_keeps_its_per_run_event_log(tmp_path: Path) -> None:
    for config in (_EARLIER_CONFIG, EMBEDDED_CONFIG):
        folder = tmp_path / str(len(config))
        folder.mkdir()
        (folder / "dagster.yaml").write_text(config)
        instance = open_instance_folder(folder)
        try:
            assert type(instance.event_log_storage) is SqliteEventLogStorage
        finally:
            instance.dispose()
        assert (folder / "dagster.yaml").read_text() == EMBEDDED_CONFIG  # pools added, event log unchanged


def test_a_new_instance_stores_in_small_pages_and_an_existing_one_is_left_as_it_is(tmp_path: Path) -> None:
    folder = tmp_path / "dagster"
    open_instance_folder(folder).dispose()
    databases = sorted(folder.rglob("*.db"))
    assert [p.name for p in databases] == ["event_log.db", "runs.db", "schedules.db"]
    for path in databases:
        with sqlite3.connect(path) as conn:
            assert conn.execute("pragma page_size").fetchone()[0] == SQLITE_PAGE_SIZE
            assert conn.execute("pragma journal_mode").fetchone()[0] == "wal"  # Dagster's mode, kept
            assert conn.execute("select count(*) from sqlite_master where type = 'table'").fetchone()[0] > 3
    # An instance made with SQLite's default pages (one of an earlier version) is not rebuilt when opened.
    other = tmp_path / "other"
    other.mkdir()
    (other / "dagster.yaml").write_text(embedded_config(other))
    open_instance_folder(other).dispose()
    for path in other.rglob("*.db"):
        with sqlite3.connect(path) as conn:
            assert conn.execute("pragma page_size").fetchone()[0] == 4096
