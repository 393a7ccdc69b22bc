"""Dagster bug: on SQLite, two processes claim the one slot of a pool (limit 1) at the same time.

Runs on bare Dagster (no AWP): `python tools/upstream/sqlite_slot_claim_race.py [--rounds N] [--processes N]`.
Exit 0 and "REPRODUCED" when, in some round, more than one process was told it holds the pool's single slot;
exit 1 when no round showed it.

Why: `SqlEventLogStorage.claim_concurrency_slot` asks `has_unassigned_slots` and then inserts its queue row as
assigned (two statements; two claimers both see a free slot), and `_claim_concurrency_slot` selects a free
slot row `with_for_update(skip_locked=True)` and then updates it `WHERE id = <that row>`. SQLite has no row
locks, so FOR UPDATE is dropped: both processes select the same free row, both updates match it (the second
overwrites the first's holder), and both claims return CLAIMED.

Proposed fix: make the update a compare-and-set, `WHERE id = <row> AND step_key IS NULL`, so the existing
`rowcount` check returns BLOCKED to the loser (and assign the queue row in the same transaction as the check).
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import tempfile
from pathlib import Path

from dagster import DagsterInstance

POOL = "race_pool"


def claim(home: str, run_id: str, barrier: multiprocessing.synchronize.Barrier,
          results: multiprocessing.queues.Queue) -> None:  # type: ignore[type-arg]
    instance = DagsterInstance.from_config(home)
    storage = instance.event_log_storage
    storage.get_concurrency_info(POOL)  # connect before the start line, so all race the claim itself
    barrier.wait()
    status = storage.claim_concurrency_slot(POOL, run_id, "step")
    results.put((run_id, bool(status.is_claimed)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--processes", type=int, default=6)
    args = parser.parse_args()
    import dagster

    home = tempfile.mkdtemp(prefix="slot-race-")
    Path(home, "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    instance = DagsterInstance.from_config(home)  # the default storage: SQLite
    storage = instance.event_log_storage
    print(f"dagster {dagster.__version__}, {type(storage).__name__}, pool {POOL!r} with 1 slot, "
          f"{args.processes} processes claiming it at once, up to {args.rounds} rounds")
    storage.set_concurrency_slots(POOL, 1)
    context = multiprocessing.get_context("fork")
    for round_number in range(1, args.rounds + 1):
        barrier = context.Barrier(args.processes)
        results = context.Queue()
        runs = [f"run-{round_number}-{n}" for n in range(args.processes)]
        workers = [context.Process(target=claim, args=(home, run, barrier, results)) for run in runs]
        for worker in workers:
            worker.start()
        claimed = [run for run, ok in (results.get(timeout=120) for _ in workers) if ok]
        for worker in workers:
            worker.join()
        holders = [slot.run_id for slot in storage.get_concurrency_info(POOL).claimed_slots]
        if len(claimed) > 1:
            print(f"REPRODUCED in round {round_number}: {len(claimed)} processes were told they hold the one "
                  f"slot: {claimed}; the slot table names {holders}")
            return 0
        print(f"round {round_number}: {len(claimed)} claimed ({claimed}), slot holder {holders}")
        for run in runs:
            storage.free_concurrency_slots_for_run(run)
    print("not reproduced in this many rounds (the window is narrow; try more rounds or processes)")
    return 1


if __name__ == "__main__":
    sys.exit(main())
