"""Dagster bug: a step's slot is freed and its queue row removed in two transactions, so a kill between the two
leaves an assigned queue row that no slot backs, and it holds the pool for good.

Runs on bare Dagster (no AWP): `python tools/upstream/slot_freed_queue_row_left.py`. Exit 0 and "REPRODUCED"
when, after the kill, the next claim of the pool is blocked while no slot is claimed; exit 1 otherwise.

Why: `SqlEventLogStorage.free_concurrency_slot_for_step` calls `_free_concurrency_slots` (transaction 1: the
slot row's holder cleared) and then `_remove_pending_steps` (transaction 2: the step's row in the pending-steps
queue deleted) and `assign_pending_steps` (transaction 3). A process killed after the first (kill -9, an OOM
kill, a pod evicted while the step ends) leaves the row assigned. `has_unassigned_slots` counts assigned rows
against the limit, so every later step of the pool waits, with the UI showing a free slot. Seen under AWP's kill
tests: the rerun after a kill -9 hung for good in `ActiveExecution.get_steps_to_execute`.

The kill is made here exactly where it hurts: the step process's `_remove_pending_steps` is replaced by a
SIGKILL of itself, so the public `free_concurrency_slot_for_step` dies between its transactions, as a process
killed at that moment does.

Proposed fix: free the slot, delete the queue row and assign the next waiter in one transaction (one
`index_connection()` block); a run's end (`free_concurrency_slots_for_run`) already cleans up what the run left,
but only if something calls it for a run whose process died.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import tempfile
from pathlib import Path

from dagster import DagsterInstance

POOL = "kill_pool"


def step_that_is_killed_while_it_frees(home: str) -> None:
    storage = DagsterInstance.from_config(home).event_log_storage
    assert storage.claim_concurrency_slot(POOL, "killed-run", "step").is_claimed
    storage._remove_pending_steps = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)  # the kill lands here
    storage.free_concurrency_slot_for_step("killed-run", "step")  # transaction 1 commits, then the process dies


def main() -> int:
    import dagster

    home = tempfile.mkdtemp(prefix="slot-kill-")
    Path(home, "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    storage = DagsterInstance.from_config(home).event_log_storage
    print(f"dagster {dagster.__version__}, {type(storage).__name__}, pool {POOL!r} with 1 slot")
    storage.set_concurrency_slots(POOL, 1)
    step = multiprocessing.get_context("fork").Process(target=step_that_is_killed_while_it_frees, args=(home,))
    step.start()
    step.join()
    print(f"the step process ended by signal {-step.exitcode if step.exitcode else 0} (9 = SIGKILL)")
    info = storage.get_concurrency_info(POOL)
    claimed = [slot.run_id for slot in info.claimed_slots]
    assigned = [(row.run_id, row.step_key) for row in info.pending_steps if row.assigned_timestamp is not None]
    print(f"after the kill: claimed slots {claimed}, assigned queue rows {assigned}")
    statuses = [storage.claim_concurrency_slot(POOL, "next-run", "step") for _ in range(3)]
    blocked = not any(status.is_claimed for status in statuses)
    print(f"the next run's step claims the pool 3 times: {'blocked each time' if blocked else 'claimed'}")
    if blocked and not claimed and ("killed-run", "step") in assigned:
        print("REPRODUCED: no slot is held, yet the dead step's assigned queue row keeps the pool's only slot; "
              "every later step of the pool waits until someone frees the dead run by hand "
              "(free_concurrency_slots_for_run)")
        storage.free_concurrency_slots_for_run("killed-run")
        after = storage.claim_concurrency_slot(POOL, "next-run", "step")
        print(f"after free_concurrency_slots_for_run('killed-run'): the next step claims it: {after.is_claimed}")
        return 0
    print("not reproduced")
    return 1


if __name__ == "__main__":
    sys.exit(main())
