"""Eight processes opening one fresh SQLite instance folder at once all succeed and leave it intact: one
alembic head per database, the same in all of them, and the instance opens again afterwards."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

from awp_pipelines.orchestration.ledger.instance import open_instance_folder

OPENER = textwrap.dedent("""\
    import sys, time
    from pathlib import Path
    from awp_pipelines.orchestration.ledger.instance import open_instance_folder
    go = float(sys.argv[2])
    while time.time() < go:
        time.sleep(0.001)
    instance = open_instance_folder(Path(sys.argv[1]))
    print(len(instance.get_runs()), flush=True)
    instance.dispose()
    """)


def alembic_versions(folder: Path) -> dict[str, list[str]]:
    versions = {}
    for db in sorted(folder.rglob("*.db")):
        with sqlite3.connect(db) as conn:
            versions[db.relative_to(folder).as_posix()] = [r[0] for r in conn.execute(
                "select version_num from alembic_version")]
    return versions


def test_eight_processes_opening_a_fresh_instance_leave_it_intact(
        tmp_path: Path, reliability_row: Callable[..., None]) -> None:
    folder = tmp_path / "dagster"
    started = time.monotonic()
    go = time.time() + 8.0  # dagster imports take seconds on a shared machine: all start together after
    openers = [subprocess.Popen([sys.executable, "-c", OPENER, str(folder), str(go)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True) for _ in range(8)]
    results = [(p.wait(timeout=180), *p.communicate()) for p in openers]
    ok = [code == 0 and out.strip() == "0" for code, out, _ in results]
    versions = alembic_versions(folder)
    heads = {v for rows in versions.values() for v in rows}
    intact = all(len(rows) == 1 for rows in versions.values()) and len(heads) == 1
    reliability_row("fresh SQLite instance opened by 8 processes at once", tries=8, survived=sum(ok),
                    seconds=time.monotonic() - started,
                    note=f"instance {'intact' if intact else 'BROKEN'}: one alembic head in {len(versions)} dbs")
    assert all(ok), [err[-2000:] for code, _, err in results if code]
    assert set(versions) == {"history/runs.db", "history/events/event_log.db", "schedules/schedules.db"}
    assert intact, versions
    instance = open_instance_folder(folder)
    try:
        assert instance.get_runs() == []
    finally:
        instance.dispose()


def test_a_folder_with_its_own_dagster_yaml_is_used_as_it_is(tmp_path: Path) -> None:
    folder = tmp_path / "dagster"
    folder.mkdir()
    (folder / "dagster.yaml").write_text("telemetry:\n  enabled: false\n# mine\n")
    open_instance_folder(folder).dispose()
    assert (folder / "dagster.yaml").read_text().endswith("# mine\n")
