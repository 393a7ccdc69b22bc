"""One Attempt per account: processes racing for one account's lease on a fresh SQLite instance hold it one
at a time (Dagster's SQLite slot claim has no row lock; the lease serialises it)."""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path

from e2e_support import race_processes

from awp_pipelines.orchestration.ledger.factory import ledger_of
from awp_pipelines.orchestration.ledger.instance import open_instance_folder
from awp_pipelines.orchestration.ledger.lease import account_pool, leased

HOLD_S = 0.3


def _hold(home: str, number: int, start_at: float, spans: multiprocessing.Queue) -> None:
    instance = open_instance_folder(Path(home))
    time.sleep(max(0.0, start_at - time.time()))  # every process claims at the same moment
    with leased(ledger_of(instance), f"run-{number}", "step", {"account": "shared"}):
        began = time.time()
        time.sleep(HOLD_S)
        spans.put((began, time.time()))
    instance.dispose()


def test_racing_processes_hold_one_accounts_lease_one_at_a_time(tmp_path: Path) -> None:
    home = tmp_path / "home"
    open_instance_folder(home).dispose()
    held = sorted(race_processes(_hold, lambda n, start_at, spans: (str(home), n, start_at, spans)))
    assert all(a[1] <= b[0] for a, b in zip(held, held[1:], strict=False)), held
    instance = open_instance_folder(home)
    try:  # and every lease was given back
        assert not instance.event_log_storage.get_concurrency_info(account_pool("shared")).claimed_slots
    finally:
        instance.dispose()
