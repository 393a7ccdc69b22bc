"""An Attempt found in the ledger it is handed by its id, for its page (`awp serve`): its started marker and, once
it ended, its record, each with the run and asset that stored it. Bounded by the packet run (`Ledger.attempt_log`:
the runs tagged with it, each run's own Attempt events)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from awp_pipelines.core.engine.attempt_record import AttemptRecord
from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.orchestration.ledger.history import ATTEMPT_STARTED
from awp_pipelines.orchestration.ledger.ledger import Ledger


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
    agent_run_state: str = ""  # the AgentRun's state once it ended, stored with its record (`waiting — …`)

    @property
    def prompt(self) -> str:
        parts = split_attempt_id(self.attempt_id)
        return parts[1] if parts else ""

    @property
    def mode(self) -> str:
        return self.record.identity.mode if self.record else str(self.started.get(tags.MODE) or "run")

    @property
    def packet(self) -> str:
        return self.record.identity.packet if self.record else ""

    @property
    def prompt_name(self) -> str:
        return self.record.prompt_name if self.record else (self.asset_key[-1] if self.asset_key else "")

    @property
    def result(self) -> str:
        """The record's result; `running` while its run goes on; `interrupted` when the run ended without one."""
        if self.record is not None:
            return self.record.result
        return "running" if self.running else "interrupted"

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


def packet_run_attempts(ledger: Ledger, packet_run: str) -> list[FoundAttempt]:
    """Every Attempt of the packet run, in the order they started (runs oldest first, events in log order)."""
    return _attempts(ledger, packet_run, f"{packet_run}.")


def agent_run_attempts(ledger: Ledger, agent_run: str) -> list[FoundAttempt]:
    """Every Attempt of the AgentRun the ledger holds, oldest first."""
    return sorted(_attempts(ledger, agent_run.partition(".")[0], f"{agent_run}.a"), key=lambda a: a.number)


def _attempts(ledger: Ledger, packet_run: str, prefix: str) -> list[FoundAttempt]:
    found: dict[str, FoundAttempt] = {}
    log = ledger.attempt_log(packet_run)
    for run in log.runs:
        run_id, status = run.run_id, run.status.value
        for key, meta in log.events.get(run_id, []):
            record = AttemptRecord.model_validate(meta[tags.RECORD]) if isinstance(meta.get(tags.RECORD), dict) \
                else None
            attempt = str(meta.get(tags.ATTEMPT) or (record.identity.attempt_id if record else ""))
            if not attempt.startswith(prefix):
                continue
            entry = found.setdefault(attempt, FoundAttempt(
                attempt, int(str(meta.get(tags.ATTEMPT_NUMBER) or attempt.rpartition(".a")[2])), run_id,
                list(key.path), {}, None, status))
            if meta.get(tags.EVENT) == ATTEMPT_STARTED:
                entry.started = meta
            if record is not None:
                entry.record = record
                entry.agent_run_state = str(meta.get(tags.AGENT_RUN_STATE) or "")
            entry.run_status = status
            entry.driver_gone = run_id in log.gone
    return list(found.values())


def find_attempt(ledger: Ledger, attempt: str) -> FoundAttempt | None:
    parts = split_attempt_id(attempt)
    if parts is None:
        return None
    agent_run = tags.agent_run_id(parts[0], parts[1])
    return next((a for a in agent_run_attempts(ledger, agent_run) if a.attempt_id == attempt), None)
