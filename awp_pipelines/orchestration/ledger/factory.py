"""The one place a `Ledger` is made. Every client is handed the ledger made here and is written against the `Ledger`
type, never `InstanceLedger`: a prompt's compute and the run worker get theirs where Dagster hands them their
context (`ledger_of(context.instance)`), a sensor tick where the daemon ticks it (`tick_ledger`), and the SDK and the
CLI when they open an instance (`open_ledger`), handing it on to `awp run`'s driver and the views. So a test hands
them a `MemoryLedger` instead, and nothing else changes. tests/ledger/test_ledger_made_once.py holds this module to
being the only one that constructs `InstanceLedger`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from dagster import DagsterInstance, SensorEvaluationContext

from awp_pipelines.orchestration.ledger.instance import hold_connections, open_instance_folder, tick_instance
from awp_pipelines.orchestration.ledger.instance_ledger import InstanceLedger
from awp_pipelines.orchestration.ledger.ledger import Ledger


def ledger_of(instance: DagsterInstance) -> Ledger:
    """The ledger kept in `instance` (SQLite or PostgreSQL)."""
    return InstanceLedger(instance)


def tick_ledger(context: SensorEvaluationContext) -> Ledger:
    """The ledger a sensor tick reads: that of its code server's instance, opened once per process."""
    return ledger_of(tick_instance(context))


@contextmanager
def open_ledger(home: Path, *, many_reads: bool = False) -> Iterator[tuple[Ledger, DagsterInstance]]:
    """The ledger of the instance stored in `home` (instance.py decides which folder), with the instance itself
    for what only Dagster does with it (executing runs, its UI links); disposed when the block ends. `many_reads`:
    for a command asking many small questions (`awp status`, `awp watch`), one held connection per storage."""
    instance = open_instance_folder(home)
    try:
        yield ledger_of(hold_connections(instance) if many_reads else instance), instance
    finally:
        instance.dispose()
