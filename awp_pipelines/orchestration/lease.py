"""One Attempt per account at a time, however the run was launched: a lease on a Dagster concurrency
pool per account (`awp_account_<name>`, limit 1), taken by the compute once it knows the account.

The pool lives in the instance's storage, so every process and every run shares it, and it shows on the
UI's concurrency page. A run that dies holding it is freed by Dagster's run monitoring
(`free_slots_after_run_end_seconds`), like any op's pool slot.
"""

from __future__ import annotations

import fcntl
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from dagster import DagsterInstance, Failure

from awp_pipelines import interrupts
from awp_pipelines.orchestration.naming import dagster_name

_POLL_S = (0.2, 0.5, 1.0, 2.0, 5.0)


def account_pool(account: str) -> str:
    return f"awp_account_{dagster_name(account)}"


@contextmanager
def account_lease(instance: DagsterInstance, account: str | None, run_id: str, step_key: str,
                  on_wait: Callable[[str], None] = lambda msg: None) -> Iterator[None]:
    if account is None:
        yield
        return
    with pool_lease(instance, account_pool(account), run_id, f"{step_key}@account",
                    f"account {account} is busy with another Attempt", on_wait):
        yield


@contextmanager
def tree_lease(instance: DagsterInstance, repo_pool: str, run_id: str, step_key: str,
               on_wait: Callable[[str], None] = lambda msg: None) -> Iterator[None]:
    """One agent per work tree, also where Dagster's own op-pool claim can race (SQLite): the same lease,
    on `<repo pool>_tree`, taken before the account's (one order everywhere: no deadlock)."""
    with pool_lease(instance, f"{repo_pool}_tree", run_id, f"{step_key}@tree",
                    "another Attempt is editing this work tree", on_wait):
        yield


@contextmanager
def pool_lease(instance: DagsterInstance, pool: str, run_id: str, holder: str, busy: str,
               on_wait: Callable[[str], None] = lambda msg: None) -> Iterator[None]:
    """Hold the pool's one slot for the block. `holder` is its own step key, so the op's own pool slot
    and this lease are freed independently."""
    storage = instance.event_log_storage
    if not storage.supports_global_concurrency_limits:
        yield
        return
    ensure_pool(instance, pool)
    waited = 0
    while not _claim(instance, pool, run_id, holder):
        if waited == 0:
            on_wait(f"{busy}; waiting for it (pool {pool})")
        _pause(_POLL_S[min(waited, len(_POLL_S) - 1)], pool)
        waited += 1
    try:
        yield
    finally:
        storage.free_concurrency_slot_for_step(run_id, holder)


def fail_if_stopping(what: str) -> None:
    """Fail the step when `awp run` was asked to stop (interrupts.py) before its Attempt started."""
    stop = interrupts.current()
    if stop is not None and stop.signum is not None:
        raise Failure(description=f"awp run is stopping ({signal.Signals(stop.signum).name}) {what}",
                      allow_retries=False)


def _pause(seconds: float, pool: str) -> None:
    """Sleep between claims, but end the wait at once when `awp run` was asked to stop (interrupts.py): no
    Attempt has started yet (its start is stored once the leases are held), so there is nothing to record."""
    end = time.monotonic() + seconds
    while True:
        fail_if_stopping(f"while waiting for pool {pool}: the Attempt was not started")
        left = end - time.monotonic()
        if left <= 0:
            return
        time.sleep(min(left, 0.1))


def _claim(instance: DagsterInstance, pool: str, run_id: str, holder: str) -> bool:
    """Dagster's claim selects a free slot, then takes it; on SQLite nothing locks the row in between, so
    two processes took one slot (seen in the daemon test). The instance folder's lock makes it one step."""
    with _pools_lock(instance):
        return instance.event_log_storage.claim_concurrency_slot(pool, run_id, holder).is_claimed


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


def ensure_pool(instance: DagsterInstance, pool: str, limit: int = 1) -> None:
    """Create the pool once. Creating it counts its slots, then inserts: on SQLite (no row locks) two
    processes doing it at once would make two slots, so the instance folder's lock serialises it."""
    storage = instance.event_log_storage
    if pool in storage.get_concurrency_keys():
        return
    with _pools_lock(instance):
        if pool not in storage.get_concurrency_keys():
            storage.set_concurrency_slots(pool, limit)
