"""A database that lost its last commits (issue 32: PostgreSQL with `synchronous_commit=off`, killed): the free
of a pool's slot survived and the turn it gave the next waiter did not, so the waiter's pending step stays
unassigned beside a free slot and Dagster's own claim never succeeds (`awp run` spun for 400+ s). The ledger
notices the disagreement and assigns the turn: at the waiter's next claim, and at each beat of its run."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from dagster import DagsterInstance, DagsterRunStatus
from dagster._core.storage.event_log.schema import ConcurrencySlotsTable as slots
from dagster._core.storage.event_log.schema import PendingStepsTable as queue
from dagster._core.test_utils import create_run_for_test

from awp_pipelines.dagster_compat.pools import claim_slot, ensure_pool
from awp_pipelines.orchestration.ledger.factory import ledger_of
from awp_pipelines.orchestration.ledger.instance import open_instance_folder

POOL = "app_tree"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def instance(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[DagsterInstance]:
    home = tmp_path / "home"
    if request.param == "postgres":
        from e2e_support import postgres_instance_dir

        home = postgres_instance_dir(home, request.getfixturevalue("fresh_pg_database"))
    opened = open_instance_folder(home)
    yield opened
    opened.dispose()


def _lose_the_turn(instance: DagsterInstance) -> tuple[str, str]:
    """Run A holds the pool, run B waits; A's slot is freed and its queue row gone, B's turn never given."""
    holder, waiter = (create_run_for_test(instance, job_name="lost__job", status=DagsterRunStatus.STARTED).run_id
                      for _ in range(2))
    ensure_pool(instance, POOL)
    assert claim_slot(instance, POOL, holder, "01")
    assert not claim_slot(instance, POOL, waiter, "02")
    storage = instance.event_log_storage
    with storage.index_connection() as conn:  # type: ignore[attr-defined]
        conn.execute(slots.update().where(slots.c.run_id == holder).values(run_id=None, step_key=None))
        conn.execute(queue.delete().where(queue.c.run_id == holder))
    # What Dagster's executor does while the step waits: it stays unassigned, however often it asks.
    assert not any(storage.claim_concurrency_slot(POOL, waiter, "02").is_claimed for _ in range(3))
    return holder, waiter


def test_the_waiters_next_claim_repairs_the_lost_turn_and_takes_the_slot(instance: DagsterInstance) -> None:
    _, waiter = _lose_the_turn(instance)
    assert claim_slot(instance, POOL, waiter, "02")


def test_a_beat_of_the_waiting_run_repairs_it_and_dagsters_own_claim_then_succeeds(instance: DagsterInstance) -> None:
    _, waiter = _lose_the_turn(instance)
    assert ledger_of(instance).repair_turns(waiter) == 1
    assert instance.event_log_storage.claim_concurrency_slot(POOL, waiter, "02").is_claimed
    assert ledger_of(instance).repair_turns(waiter) == 0  # nothing left to repair


def test_a_waiter_whose_pool_is_held_is_left_waiting(instance: DagsterInstance) -> None:
    holder, waiter = (create_run_for_test(instance, job_name="lost__job", status=DagsterRunStatus.STARTED).run_id
                      for _ in range(2))
    ensure_pool(instance, POOL)
    assert claim_slot(instance, POOL, holder, "01") and not claim_slot(instance, POOL, waiter, "02")
    assert ledger_of(instance).repair_turns(waiter) == 0 and not claim_slot(instance, POOL, waiter, "02")
