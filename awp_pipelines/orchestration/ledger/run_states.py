"""The run statuses of a run that has not ended, as the ledger reads them (SUSPENDED aside: nothing of AWP's
is ever suspended). Whether its driver still lives is liveness.py's."""

from __future__ import annotations

from dagster import DagsterRunStatus

UNFINISHED = [DagsterRunStatus.QUEUED, DagsterRunStatus.NOT_STARTED, DagsterRunStatus.STARTING,
              DagsterRunStatus.STARTED, DagsterRunStatus.CANCELING]
