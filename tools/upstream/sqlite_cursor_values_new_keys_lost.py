"""Dagster bug: on SQLite (and any storage that keeps `SqlRunStorage.set_cursor_values`), writing several keys at
once when one of them already exists updates the existing ones and silently drops the new ones.

Runs on bare Dagster (no AWP): `python tools/upstream/sqlite_cursor_values_new_keys_lost.py`. Exit 0 and
"REPRODUCED" when, after `set_cursor_values({"old": "2", "new": "1"})` on a store that held `old`, `new` is missing;
exit 1 otherwise.

Why: `SqlRunStorage.set_cursor_values` inserts every pair in one statement and, on an IntegrityError (any key
already there), falls back to an UPDATE ... WHERE key IN (the pairs' keys): rows that exist are updated, the keys
that did not exist are never inserted. No error is raised, so a caller that wrote two facts believes both are
stored. PostgreSQL's storage overrides the method with an upsert and is not affected. Seen while measuring AWP's
bookkeeping (issue 32): noting a run's packet run together with its runner in one write lost the runner's note;
AWP writes one key per call (`dagster_compat/kvs.py`), so it is not affected today.

Proposed fix: an upsert (`INSERT ... ON CONFLICT (key) DO UPDATE`, which SQLite has had since 3.24), or insert the
keys the UPDATE did not match.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from dagster import DagsterInstance


def main() -> int:
    import dagster

    home = tempfile.mkdtemp(prefix="cursor-values-")
    Path(home, "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    instance = DagsterInstance.from_config(home)
    storage = instance.run_storage
    print(f"dagster {dagster.__version__}, {type(storage).__name__}")
    storage.set_cursor_values({"old": "1"})
    storage.set_cursor_values({"old": "2", "new": "1"})  # one key exists, one is new
    stored = storage.get_cursor_values({"old", "new"})
    print(f"after writing old=2 and new=1 at once, the store holds {stored}")
    if stored.get("old") == "2" and "new" not in stored:
        print("REPRODUCED: the existing key was updated and the new key was silently not stored")
        return 0
    print("not reproduced: both keys are stored")
    return 1


if __name__ == "__main__":
    sys.exit(main())
