"""The runs that ended since a time: the recovery sensor's one read a tick, for every packet it serves.

One query by status and update time (an index range that holds only what ended since), not one per packet:
on SQLite each of Dagster's run reads also opens an engine and reflects the runs table (~40 ms of CPU), and a
filter on the packet tag would walk the packet's whole history (1.6x slower at 10,000 past runs than at 100).
The sensor picks each run's packet out of its `awp/packet` tag."""

from __future__ import annotations

from datetime import UTC, datetime

from dagster import DagsterInstance, RunRecord, RunsFilter

from awp_pipelines.orchestration.ledger.history import FINISHED


def ended_since(instance: DagsterInstance, after: float, limit: int) -> list[RunRecord]:
    """The runs that ended (reached a finished status) after `after`, oldest update first, at most `limit`."""
    return list(instance.get_run_records(
        RunsFilter(statuses=list(FINISHED), updated_after=datetime.fromtimestamp(after, UTC)),
        limit=limit, order_by="update_timestamp", ascending=True))
