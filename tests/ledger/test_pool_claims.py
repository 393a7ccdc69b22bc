"""A lease's pool slot on the embedded instance (issue 17): an idle pool is claimed in one transaction and given
back in one (Dagster's claim takes five storage connections and its free three, each with its commit), and a
busy one still queues its waiters as Dagster does, the next one assigned when the slot is given back."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from awp_pipelines.dagster_compat.pools import claim_slot, claimed_slots, ensure_pool, free_slot, slot_holders
from awp_pipelines.orchestration.ledger.instance import open_instance_folder

POOL = "awp_x_tree"


def _queue(instance) -> dict[str, bool]:  # type: ignore[no-untyped-def]
    """Holder → whether its queue row is assigned."""
    info = instance.event_log_storage.get_concurrency_info(POOL)
    return {f"{s.run_id}:{s.step_key}": s.assigned_timestamp is not None for s in info.pending_steps}


def test_an_idle_pool_is_claimed_and_freed_in_one_transaction_each(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    instance = open_instance_folder(tmp_path / "home")
    try:
        ensure_pool(instance, POOL)
        storage = instance.event_log_storage
        opened: Counter[str] = Counter()
        real = type(storage).index_connection

        def counted(self):  # type: ignore[no-untyped-def]
            opened["connections"] += 1
            return real(self)

        monkeypatch.setattr(type(storage), "index_connection", counted)
        assert claim_slot(instance, POOL, "run-a", "step@tree")
        assert opened["connections"] == 1, opened
        monkeypatch.undo()
        # The holder looks as Dagster's own claim leaves it: its slot, and its queue row assigned.
        assert claimed_slots(instance, POOL) == ["run-a"]
        assert _queue(instance) == {"run-a:step@tree": True}
        assert slot_holders(instance) == {"run-a"}
        monkeypatch.setattr(type(storage), "index_connection", counted)
        free_slot(instance, "run-a", "step@tree")
        assert opened["connections"] == 2, opened
        monkeypatch.undo()
        assert claimed_slots(instance, POOL) == [] and _queue(instance) == {}
    finally:
        instance.dispose()


def test_a_busy_pool_queues_its_waiters_and_assigns_the_next_one_when_freed(tmp_path: Path) -> None:
    instance = open_instance_folder(tmp_path / "home")
    try:
        ensure_pool(instance, POOL)
        assert claim_slot(instance, POOL, "run-a", "step@tree")
        assert not claim_slot(instance, POOL, "run-b", "step@tree")  # queued behind run-a
        assert not claim_slot(instance, POOL, "run-c", "step@tree")
        assert _queue(instance) == {"run-a:step@tree": True, "run-b:step@tree": False, "run-c:step@tree": False}
        free_slot(instance, "run-a", "step@tree")
        assert _queue(instance) == {"run-b:step@tree": True, "run-c:step@tree": False}  # the oldest waiter
        assert not claim_slot(instance, POOL, "run-c", "step@tree")  # not its turn
        assert claim_slot(instance, POOL, "run-b", "step@tree")
        assert claimed_slots(instance, POOL) == ["run-b"]
        free_slot(instance, "run-b", "step@tree")
        assert claim_slot(instance, POOL, "run-c", "step@tree")
        free_slot(instance, "run-c", "step@tree")
        assert claimed_slots(instance, POOL) == [] and _queue(instance) == {}
    finally:
        instance.dispose()
