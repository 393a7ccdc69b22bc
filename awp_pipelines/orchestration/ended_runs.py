"""The runs that ended since a time, read once for every packet's recovery sensor of a process.

Each packet's sensor looks at the runs that ended since its cursor. Reading them is one query by status and
update time (an index range), but on SQLite each of Dagster's run reads also opens an engine and reflects the
runs table (~40 ms of CPU): 200 packets made that 200 reads every ~5 s, most of a core for nothing new. The
sensors of a code location tick in one process (the code server), one after the other, and their cursors
stand at the same place once caught up (each moves past every run that ended, its packet's or not), so the
first read of a round serves the others: a read answers a later caller whose time is no earlier than its
own, for FRESH_S, once per sensor (a sensor's next tick reads again). A run that ends meanwhile is seen
by the next round's read: nothing is missed, only seen a round later at most."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime

from dagster import DagsterInstance, RunRecord, RunsFilter

from awp_pipelines.orchestration.history import FINISHED

FRESH_S = 2.0  # under a round of the daemon's sensors (a tick every 5 s)


@dataclass(frozen=True)
class _Read:
    after: float
    at: float  # monotonic time of the read
    records: list[RunRecord]
    limit: int
    served: set[str]  # the sensors it answered: each once


_LOCK = threading.Lock()
_READS: dict[str, _Read] = {}  # by instance folder: a code server may open its instance more than once


def ended_since(instance: DagsterInstance, after: float, limit: int, sensor: str) -> list[RunRecord]:
    """The runs that ended (reached a finished status) after `after`, oldest update first, at most `limit`."""
    key = str(instance.root_directory)
    with _LOCK:
        read = _READS.get(key)
        if (read is not None and read.after <= after and read.limit >= limit and sensor not in read.served
                and time.monotonic() - read.at < FRESH_S):
            read.served.add(sensor)
            # A truncated read stays exact: its records are the oldest after its time, so are those after `after`.
            return [r for r in read.records if r.update_timestamp.timestamp() > after][:limit]
    records = list(instance.get_run_records(
        RunsFilter(statuses=list(FINISHED), updated_after=datetime.fromtimestamp(after, UTC)),
        limit=limit, order_by="update_timestamp", ascending=True))
    with _LOCK:
        _READS[key] = _Read(after, time.monotonic(), records, limit, {sensor})
    return records
