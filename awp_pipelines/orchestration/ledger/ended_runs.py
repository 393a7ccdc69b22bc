"""The runs that ended since a time: the recovery sensor's one read a tick, for every packet it serves.

One query by status and update time (an index range that holds only what ended since), not one per packet:
on SQLite each of Dagster's run reads also opens an engine and reflects the runs table (~40 ms of CPU), and a
filter on the packet tag would walk the packet's whole history (1.6x slower at 10,000 past runs than at 100).
The sensor picks each run's packet out of its job or asset selection (`Ledger.ended_runs`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from dagster import DagsterInstance, DagsterRun, RunsFilter

from awp_pipelines.orchestration.ledger.history import FINISHED


@dataclass(frozen=True)
class EndedRun:
    """A run that ended, as the recovery sensor reads it: the cursor moves to `updated_at`; a cancelled run's
    stop is dated `ended_at` (else `updated_at`)."""

    run: DagsterRun
    updated_at: float  # epoch s
    ended_at: float | None = None


def ended_since(instance: DagsterInstance, after: float, limit: int) -> list[EndedRun]:
    """The runs that ended (reached a finished status) after `after`, oldest update first, at most `limit`."""
    records = instance.get_run_records(
        RunsFilter(statuses=list(FINISHED), updated_after=datetime.fromtimestamp(after, UTC)),
        limit=limit, order_by="update_timestamp", ascending=True)
    return [EndedRun(r.dagster_run, r.update_timestamp.timestamp(), r.end_time) for r in records]
