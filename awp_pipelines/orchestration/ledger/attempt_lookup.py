"""An Attempt found in the instance by its id, for its page (`awp serve`): its started marker and, once it
ended, its record, each with the run and asset that stored it. Bounded by the packet run: the runs tagged with
it, each run's own asset events (Dagster's public per-run API)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dagster import DagsterInstance, RunsFilter

from awp_pipelines.core.engine.attempts import AttemptRecord
from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.orchestration.ledger.history import ATTEMPT_STARTED, run_asset_events
from awp_pipelines.orchestration.ledger.liveness import gone_runs


@dataclass
class FoundAttempt:
    """One Attempt as stored: the run it ran in, its asset, its marker's fields, its record once it ended."""

    attempt_id: str
    number: int
    run_id: str
    asset_key: list[str]
    started: dict[str, Any]
    record: AttemptRecord | None = None
    run_status: str = ""
    driver_gone: bool = False  # its run has not ended, but what drove it is gone (liveness.py): interrupted

    @property
    def running(self) -> bool:
        """No record yet and its run still going: the page keeps following it."""
        return (self.record is None and not self.driver_gone
                and self.run_status in ("STARTED", "STARTING", "QUEUED", "NOT_STARTED"))


def split_attempt_id(attempt: str) -> tuple[str, str, int] | None:
    """(packet run, prompt, number) of `<packet run>.<prompt>.a<n>`; None for anything else."""
    agent_run, _, number = attempt.rpartition(".a")
    packet_run, _, prompt = agent_run.partition(".")
    if not (number.isdigit() and packet_run and prompt):
        return None
    return packet_run, prompt, int(number)


def agent_run_attempts(instance: DagsterInstance, agent_run: str) -> list[FoundAttempt]:
    """Every Attempt of the AgentRun the instance holds, oldest first."""
    packet_run = agent_run.partition(".")[0]
    found: dict[str, FoundAttempt] = {}
    runs = instance.get_run_records(RunsFilter(tags={tags.PACKET_RUN: packet_run}))
    gone = gone_runs(instance, [run.dagster_run for run in runs])
    for run in runs:
        run_id, status = run.dagster_run.run_id, run.dagster_run.status.value
        for key, meta in run_asset_events(instance, run_id):
            attempt = str(meta.get(tags.ATTEMPT) or "")
            if not attempt.startswith(f"{agent_run}.a"):
                continue
            record = AttemptRecord.model_validate(meta[tags.RECORD]) if isinstance(meta.get(tags.RECORD), dict) \
                else None
            entry = found.setdefault(attempt, FoundAttempt(
                attempt, int(str(meta.get(tags.ATTEMPT_NUMBER) or attempt.rpartition(".a")[2])), run_id,
                list(key.path), {}, None, status))
            if meta.get(tags.EVENT) == ATTEMPT_STARTED:
                entry.started = meta
            if record is not None:
                entry.record = record
            entry.run_status = status
            entry.driver_gone = run_id in gone
    return sorted(found.values(), key=lambda a: a.number)


def find_attempt(instance: DagsterInstance, attempt: str) -> FoundAttempt | None:
    parts = split_attempt_id(attempt)
    if parts is None:
        return None
    agent_run = tags.agent_run_id(parts[0], parts[1])
    return next((a for a in agent_run_attempts(instance, agent_run) if a.attempt_id == attempt), None)
