"""Dagster's internals behind one module (issue 19 item 4): orchestration/storage.py is the only module of the
package that imports `dagster._core` or touches the storages' internals (raw event-log SQL, the key-value
table, pool slots, run tags Dagster owns). A Dagster upgrade touches one file."""

from __future__ import annotations

import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "awp_pipelines"
HOME = PACKAGE / "orchestration" / "storage.py"
# An import of Dagster's private package, a storage reached through the instance, the key-value table, pool
# slots, the event-log table, or a tag in Dagster's own `.dagster/` namespace.
INTERNALS = re.compile(r"dagster\._core|dagster/_core|\.event_log_storage\b|\.run_storage\b|cursor_values"
                       r"|KeyValueStoreTable|concurrency_slot|concurrency_keys|concurrency_info|EventLogStorage"
                       r"|[\"']\.dagster/")


def internals_in(text: str) -> list[str]:
    return [f"{n}: {line.strip()}" for n, line in enumerate(text.splitlines(), 1) if INTERNALS.search(line)]


def test_the_finder_sees_each_kind_of_internal_and_passes_public_dagster() -> None:
    assert len(internals_in("from dagster._core.storage.tags import SENSOR_NAME_TAG\n"
                            "instance.run_storage.set_cursor_values({})\n"
                            "storage = instance.event_log_storage\n"
                            "storage.claim_concurrency_slot(pool, run, step)\n"
                            'TAG = {".dagster/repository": "x"}\n')) == 5
    assert internals_in("from dagster import DagsterInstance, RunsFilter\ninstance.get_run_records()\n") == []


def test_no_module_but_storage_touches_dagster_internals() -> None:
    found = {str(path.relative_to(PACKAGE)): hits for path in sorted(PACKAGE.rglob("*.py"))
             if path != HOME and (hits := internals_in(path.read_text(encoding="utf-8")))}
    assert found == {}, "Dagster internals outside orchestration/storage.py:\n" + "\n".join(
        f"{path} {hit}" for path, hits in found.items() for hit in hits)
    assert internals_in(HOME.read_text(encoding="utf-8"))  # and storage.py is where they are
