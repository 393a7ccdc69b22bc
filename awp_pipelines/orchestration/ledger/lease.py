"""One lease for the work tree and the account: a slot of a pool (limit 1) per work tree (`<repo pool>_tree`) and
per account (`awp_account_<name>`), taken by the compute through the ledger (`Ledger.claim_slot`).

In a Dagster instance the pools are Dagster's concurrency pools, in its storage, so every process and every run
shares them, and they show on the UI's concurrency page. A run that dies holding one is freed by Dagster's run
monitoring (`free_slots_after_run_end_seconds`), or by the next `awp run` (`Ledger.reap`, `free_ended_slots`),
like any op's pool slot.

A `Lease` holds its pools in one fixed order, the work tree's before the account's (the tree is known before
the Attempt is decided, the account only after): every Attempt takes them in that order, so no two wait on
each other. It gives them all back together when its block ends.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Literal

from dagster import Failure

from awp_pipelines.core.engine import interrupts
from awp_pipelines.orchestration.compile.naming import dagster_name
from awp_pipelines.orchestration.ledger.ledger import Ledger

_POLL_S = (0.2, 0.5, 1.0, 2.0, 5.0)
Kind = Literal["tree", "account"]
_ORDER: tuple[Kind, ...] = ("tree", "account")
_BUSY = {"tree": "another Attempt is editing this work tree", "account": "account {} is busy with another Attempt"}


def account_pool(account: str) -> str:
    return f"awp_account_{dagster_name(account)}"


def tree_pool(repo_pool: str) -> str:
    """Also where Dagster's own op-pool claim can race (SQLite): one agent per work tree all the same."""
    return f"{repo_pool}_tree"


class Lease:
    """The pools one Attempt holds, claimed one kind at a time in `_ORDER`, given back together."""

    def __init__(self, ledger: Ledger, run_id: str, step_key: str,
                 on_wait: Callable[[str], None] = lambda msg: None) -> None:
        self._ledger, self._run_id, self._step_key, self._on_wait = ledger, run_id, step_key, on_wait
        self._held: list[str] = []  # holder keys
        self._kinds: list[Kind] = []

    def take(self, kind: Kind, name: str | None) -> None:
        """Wait for the pool of this work tree (a repo pool) or account; None: nothing to hold (no account)."""
        if self._kinds and _ORDER.index(kind) <= _ORDER.index(self._kinds[-1]):
            raise ValueError(f"a {kind} lease is taken before any {self._kinds[-1]} lease, once")
        self._kinds.append(kind)
        if name is None:
            return
        pool = tree_pool(name) if kind == "tree" else account_pool(name)
        # Its own holder key: the op's own pool slot and each lease are freed independently.
        holder = f"{self._step_key}@{kind}"
        waited = 0
        while not self._ledger.claim_slot(pool, self._run_id, holder):
            if waited == 0:
                self._on_wait(f"{_BUSY[kind].format(name)}; waiting for it (pool {pool})")
            _pause(_POLL_S[min(waited, len(_POLL_S) - 1)], pool)
            waited += 1
        self._held.append(holder)

    def release(self) -> None:
        for holder in reversed(self._held):
            self._ledger.free_slot(self._run_id, holder)
        self._held.clear()


@contextmanager
def leased(ledger: Ledger, run_id: str, step_key: str, pools: dict[Kind, str | None] | None = None,
           on_wait: Callable[[str], None] = lambda msg: None) -> Iterator[Lease]:
    """A Lease for the block, holding `pools` (kind → repo pool or account) at once, in the fixed order; more
    are taken with `take` inside the block. Everything it holds is given back when the block ends."""
    lease = Lease(ledger, run_id, step_key, on_wait)
    try:
        for kind in _ORDER:
            if pools and kind in pools:
                lease.take(kind, pools[kind])
        yield lease
    finally:
        lease.release()


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

