"""Dagster bug: `add_run_tags` reads the run, then writes its body and inserts the tag rows it found missing, in
separate statements, so two writers tagging one run at once lose a tag from the run's body and store a tag row
twice: the run then lacks a tag its tags table holds, and a tag filter returns it twice.

Runs on bare Dagster (no AWP): `python tools/upstream/add_run_tags_read_then_write.py`. Exit 0 and "REPRODUCED"
when, after two interleaved writers, the run's body lacks one writer's tag and a filter by the other tag returns
the run twice; exit 1 otherwise.

Why: `SqlRunStorage.add_run_tags` calls `_get_run_by_id` (a read), then updates `runs.run_body` with the tags it
read merged with the new ones, then inserts a `run_tags` row for each new key absent from what it read. Nothing
holds the run between the read and the writes (no row lock, no unique key on (run_id, key)). Two writers that both
read before either writes: the second body overwrites the first (a lost tag), and a writer that then adds a key
the body lacks inserts its row again. `handle_run_event` writes the body from an earlier read the same way. Seen in
AWP's Docker test on PostgreSQL (CI, stop 35): a filter by the packet-run tag returned the UI's run twice, so the
test took it for the packet run's second run; earlier on dagster 1.12's SQLite.

The interleaving is forced here, deterministically: writer 1's read is taken, writer 2 runs whole, then writer 1
goes on with what it read (its `_get_run_by_id` returns that read), as a writer descheduled between its read and
its writes does.

Proposed fix: write the body and the tag rows from one read inside one transaction with the run's row locked
(`SELECT ... FOR UPDATE` where the database has it), and a unique index on run_tags (run_id, key) with an upsert.
"""

from __future__ import annotations

import sys
import tempfile
import uuid
from pathlib import Path

from dagster import DagsterInstance, DagsterRun, RunsFilter


def main() -> int:
    import dagster

    home = tempfile.mkdtemp(prefix="run-tags-")
    Path(home, "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    instance = DagsterInstance.from_config(home)
    storage = instance.run_storage
    print(f"dagster {dagster.__version__}, {type(storage).__name__}")
    run = instance.add_run(DagsterRun(job_name="a_job", run_id=str(uuid.uuid4())))

    # Two writers tag the run at once: writer 1 adds `owner`, writer 2 adds `packet`.
    read_by_writer_1 = storage._get_run_by_id(run.run_id)  # writer 1 has read; it is descheduled here
    storage.add_run_tags(run.run_id, {"packet": "p1"})  # writer 2, whole
    real_read = storage._get_run_by_id
    storage._get_run_by_id = lambda run_id: read_by_writer_1  # writer 1 goes on with its read
    storage.add_run_tags(run.run_id, {"owner": "team"})
    storage._get_run_by_id = real_read

    body = instance.get_run_by_id(run.run_id)
    assert body is not None
    print(f"the run's body has tags {dict(body.tags)}")
    lost = "packet" not in body.tags
    # A later writer sees the body without `packet` and adds it again: its row is inserted a second time.
    storage.add_run_tags(run.run_id, {"packet": "p1"})
    found = [r.run_id for r in instance.get_runs(RunsFilter(tags={"packet": "p1"}))]
    print(f"a filter by packet=p1 returns {len(found)} run(s) for 1 run")
    if lost and len(found) == 2:
        print("REPRODUCED: writer 2's tag is lost from the run's body though its tags table holds it, and a "
              "filter by that tag returns the run twice")
        return 0
    print("not reproduced: add_run_tags keeps both writers' tags and one row per key")
    return 1


if __name__ == "__main__":
    sys.exit(main())
