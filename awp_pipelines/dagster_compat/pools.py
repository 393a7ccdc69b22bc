"""Pool slots: Dagster's global concurrency pools, created, claimed and freed with AWP's own SQL over Dagster's slot
and queue tables (docs/upstream.md: the two Dagster bugs it works around), and their holders listed."""

from __future__ import annotations

import fcntl
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from dagster import DagsterInstance

if TYPE_CHECKING:
    from dagster._core.storage.event_log.sql_event_log import SqlEventLogStorage


def pools_supported(instance: DagsterInstance) -> bool:
    return bool(instance.event_log_storage.supports_global_concurrency_limits)


@contextmanager
def _pools_lock(instance: DagsterInstance) -> Iterator[None]:
    lock_file = Path(instance.root_directory) / ".awp-pools.lock"
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    with lock_file.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


# Pools this process saw exist, per instance: a pool is made once and never removed by AWP, so each Attempt
# does not ask again (a storage round trip per lease). A claim that fails forgets it (claim_slot): the next
# ensure_pool asks, in case someone deleted it.
_KNOWN_POOLS: weakref.WeakKeyDictionary[DagsterInstance, set[str]] = weakref.WeakKeyDictionary()


def ensure_pool(instance: DagsterInstance, pool: str, limit: int = 1) -> None:
    """Create the pool once. Creating it counts its slots, then inserts: on SQLite (no row locks) two
    processes doing it at once would make two slots, so the instance folder's lock serialises it."""
    known = _KNOWN_POOLS.setdefault(instance, set())
    if pool in known:
        return
    storage = instance.event_log_storage
    if pool not in storage.get_concurrency_keys():
        with _pools_lock(instance):
            if pool not in storage.get_concurrency_keys():
                storage.set_concurrency_slots(pool, limit)
    known.add(pool)


def claim_slot(instance: DagsterInstance, pool: str, run_id: str, holder: str) -> bool:
    """Dagster's claim selects a free slot, then takes it; on SQLite nothing locks the row in between, so
    two processes took one slot (seen in the daemon test). The instance folder's lock makes it one step.
    A pool nobody holds or waits for is claimed in one transaction (`_claim_idle`); else Dagster's claim
    queues this holder behind the others (five transactions: queue, assign, check, claim)."""
    from dagster._core.storage.event_log.sql_event_log import SqlEventLogStorage

    storage = instance.event_log_storage
    with _pools_lock(instance):
        claimed = isinstance(storage, SqlEventLogStorage) and _claim_idle(storage, pool, run_id, holder)
        claimed = claimed or bool(storage.claim_concurrency_slot(pool, run_id, holder).is_claimed)
        if not claimed and isinstance(storage, SqlEventLogStorage) and assign_lost_turns(storage, run_id):
            claimed = bool(storage.claim_concurrency_slot(pool, run_id, holder).is_claimed)
    if not claimed:
        _KNOWN_POOLS.get(instance, set()).discard(pool)
    return claimed


def assign_lost_turns(storage: SqlEventLogStorage, run_id: str) -> int:
    """Repair a queue the database lost a commit of: a waiter of `run_id` left unassigned in a pool whose free
    slots no assigned waiter is about to take. Freeing a slot assigns the next waiter (one transaction, or
    Dagster's two); a server that loses its last commits (PostgreSQL, `synchronous_commit=off`, killed) can
    keep the free slot and lose the assignment, and the waiter polls forever (issue 32). Assigns the oldest
    waiters (priority, then age: Dagster's order) of those pools, as many as there are free slots nobody is
    assigned to. How many it assigned."""
    import sqlalchemy as sa
    from dagster._core.storage.event_log.schema import ConcurrencySlotsTable as slots
    from dagster._core.storage.event_log.schema import PendingStepsTable as queue
    from dagster._core.storage.sqlalchemy_compat import db_select

    assigned = 0
    with storage.index_connection() as conn:
        pools = [row[0] for row in conn.execute(db_select([queue.c.concurrency_key]).where(
            queue.c.run_id == run_id, queue.c.assigned_timestamp.is_(None)).distinct()).fetchall()]
        for pool in pools:
            free = conn.execute(db_select([sa.func.count()]).select_from(slots).where(
                slots.c.concurrency_key == pool, slots.c.step_key.is_(None), slots.c.deleted.is_(False))).scalar()
            claimed = conn.execute(db_select([sa.func.count()]).select_from(slots).where(
                slots.c.concurrency_key == pool, slots.c.step_key.is_not(None))).scalar()
            turns = conn.execute(db_select([sa.func.count()]).select_from(queue).where(
                queue.c.concurrency_key == pool, queue.c.assigned_timestamp.is_not(None))).scalar()
            # Every claimed slot has its assigned queue row; the assigned rows beyond them are about to claim.
            spare = int(free or 0) - max(0, int(turns or 0) - int(claimed or 0))
            if spare <= 0:
                continue
            waiters = [row[0] for row in conn.execute(
                db_select([queue.c.id]).where(queue.c.concurrency_key == pool, queue.c.assigned_timestamp.is_(None))
                .order_by(queue.c.priority.desc(), queue.c.create_timestamp.asc()).limit(spare)).fetchall()]
            if waiters:
                conn.execute(queue.update().where(queue.c.id.in_(waiters), queue.c.assigned_timestamp.is_(None))
                             .values(assigned_timestamp=sa.func.now()))
                assigned += len(waiters)
    return assigned


def repair_lost_turns(instance: DagsterInstance, run_id: str) -> int:
    """`assign_lost_turns` for the run's waiting steps, on a SQL storage (every shipped one)."""
    from dagster._core.storage.event_log.sql_event_log import SqlEventLogStorage

    storage = instance.event_log_storage
    return assign_lost_turns(storage, run_id) if isinstance(storage, SqlEventLogStorage) else 0


def _claim_idle(storage: SqlEventLogStorage, pool: str, run_id: str, holder: str) -> bool:
    """Claim a slot of `pool` if no step holds or waits for one (no row of the pool in the queue): the slot
    taken by compare-and-set (its step still empty), and the queue row Dagster's own claim leaves (assigned),
    so a holder looks the same to every reader (the UI, run monitoring, slot_holders). Whether it did."""
    import sqlalchemy as sa
    from dagster._core.storage.event_log.schema import ConcurrencySlotsTable as slots
    from dagster._core.storage.event_log.schema import PendingStepsTable as queue
    from dagster._core.storage.sqlalchemy_compat import db_select

    with storage.index_connection() as conn:
        if conn.execute(db_select([queue.c.id]).where(queue.c.concurrency_key == pool).limit(1)).fetchone():
            return False
        free = conn.execute(db_select([slots.c.id]).where(
            slots.c.concurrency_key == pool, slots.c.step_key.is_(None), slots.c.deleted.is_(False)).limit(1)
        ).fetchone()
        if free is None:
            return False
        taken = conn.execute(slots.update().where(slots.c.id == free[0], slots.c.step_key.is_(None))
                             .values(run_id=run_id, step_key=holder)).rowcount
        if taken != 1:
            return False
        conn.execute(queue.insert().values(concurrency_key=pool, run_id=run_id, step_key=holder, priority=0,
                                           assigned_timestamp=sa.func.now()))
        return True


def free_slot(instance: DagsterInstance, run_id: str, holder: str) -> None:
    from dagster._core.storage.event_log.sql_event_log import SqlEventLogStorage

    storage = instance.event_log_storage
    if isinstance(storage, SqlEventLogStorage):
        _free_in_one(storage, run_id, holder)
    else:
        storage.free_concurrency_slot_for_step(run_id, holder)


def _free_in_one(storage: SqlEventLogStorage, run_id: str, holder: str) -> None:
    """Dagster's `free_concurrency_slot_for_step` in one transaction, not three: the holder's slots freed
    (those of a lowered limit deleted), its queue rows removed, and for each pool where it was assigned the
    next waiter assigned (highest priority, then oldest)."""
    import sqlalchemy as sa
    from dagster._core.storage.event_log.schema import ConcurrencySlotsTable as slots
    from dagster._core.storage.event_log.schema import PendingStepsTable as queue
    from dagster._core.storage.sqlalchemy_compat import db_select

    with storage.index_connection() as conn:
        conn.execute(slots.delete().where(slots.c.run_id == run_id, slots.c.step_key == holder,
                                          slots.c.deleted.is_(True)))
        conn.execute(slots.update().where(slots.c.run_id == run_id, slots.c.step_key == holder)
                     .values(run_id=None, step_key=None))
        rows = conn.execute(db_select([queue.c.id, queue.c.assigned_timestamp, queue.c.concurrency_key])
                            .where(queue.c.run_id == run_id, queue.c.step_key == holder).with_for_update()
                            ).fetchall()
        if not rows:
            return
        conn.execute(queue.delete().where(queue.c.id.in_([row[0] for row in rows])))
        for pool in {row[2] for row in rows if row[1] is not None}:
            waiter = conn.execute(db_select([queue.c.id])
                                  .where(queue.c.concurrency_key == pool, queue.c.assigned_timestamp.is_(None))
                                  .order_by(queue.c.priority.desc(), queue.c.create_timestamp.asc()).limit(1)
                                  ).fetchone()
            if waiter:
                conn.execute(queue.update().where(queue.c.id == waiter[0]).values(assigned_timestamp=sa.func.now()))


def free_run_slots(instance: DagsterInstance, run_id: str) -> None:
    """Every slot and queue entry the run holds."""
    if pools_supported(instance):
        instance.event_log_storage.free_concurrency_slots_for_run(run_id)


def slot_holders(instance: DagsterInstance) -> set[str]:
    """The runs that hold a pool slot, or an entry of a pool's queue (a pending step counts too: a step that
    ends frees its slot, then, in a second transaction, its queue entry; a kill between the two leaves an
    assigned entry that no slot backs, and it holds the pool all the same)."""
    if not pools_supported(instance):
        return set()
    # One read for every pool (the queue's run ids: a claimed slot always has its queue row, assigned, from
    # Dagster's claim and from _claim_idle alike), not two per pool.
    return {run_id for run_id in instance.event_log_storage.get_concurrency_run_ids() if run_id}


def claimed_slots(instance: DagsterInstance, pool: str) -> list[str]:
    """The run ids holding the pool's slots."""
    return [slot.run_id for slot in instance.event_log_storage.get_concurrency_info(pool).claimed_slots]
