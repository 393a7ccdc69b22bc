"""A packet run's history read back from Dagster: its runs (by the `awp/packet_run` tag) and the Attempt
records and start markers in their event logs. Budgets are counted from this, never from memory.

Reads are bounded by the packet run (its runs, their events), never by the asset's whole history.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from dagster import AssetKey, DagsterEventType, DagsterInstance, DagsterRun, DagsterRunStatus, RunsFilter

from awp_pipelines import tags
from awp_pipelines.attempts import AttemptRecord
from awp_pipelines.budget import Budget, Spend, total
from awp_pipelines.launches import PromptState
from awp_pipelines.orchestration.binding import PacketBinding
from awp_pipelines.packet import Packet
from awp_pipelines.policy import AttemptFact, Target, interrupted_fact

ATTEMPT_STARTED = "attempt_started"
FINISHED = frozenset({DagsterRunStatus.SUCCESS, DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED})
_RECORD_EVENTS = {DagsterEventType.ASSET_MATERIALIZATION, DagsterEventType.ASSET_OBSERVATION}


def plain_value(value: object) -> object:
    """A stored metadata entry as its plain Python value."""
    return getattr(value, "value", value) if value is not None else None


@dataclass
class AgentRunHistory:
    """One AgentRun as stored: its records, and the Attempts started (with where they ran)."""

    records: list[AttemptRecord] = field(default_factory=list)
    started: dict[int, tuple[str, str, Target]] = field(default_factory=dict)  # number → (run id, mode, target)

    def facts(self, finished_runs: set[str]) -> list[AttemptFact]:
        """Recorded Attempts, plus an `interrupted` fact for each started Attempt whose run ended with no
        record: its process died, and the Attempt still counts."""
        by_number: dict[int, AttemptFact] = {r.identity.number: r.fact() for r in self.records}
        for number, (run_id, mode, target) in self.started.items():
            if number not in by_number and run_id in finished_runs:
                by_number[number] = interrupted_fact(number, mode, target)
        return [by_number[n] for n in sorted(by_number)]

    @property
    def last_record(self) -> AttemptRecord | None:
        return self.records[-1] if self.records else None


@dataclass
class PacketRunHistory:
    packet_run: str
    runs: list[DagsterRun]
    agent_runs: dict[str, AgentRunHistory]  # prompt id → its AgentRun in this packet run
    ended_at: dict[str, float]  # run id → end time (epoch seconds)

    def finished_runs(self) -> set[str]:
        return {r.run_id for r in self.runs if r.status in FINISHED}

    def scope(self, packet: Packet, keys: Mapping[AssetKey, str]) -> list[str]:
        """The prompts this packet run was asked to run, in packet order."""
        selected: set[str] = set()
        for run in self.runs:
            selected |= prompts_of_run(run, keys)
        return [p.id for p in packet.prompts if p.id in selected]

    def spend(self) -> Spend:
        """The packet run's recorded spend: every stored Attempt record of every prompt."""
        return total(r.fact().spend for h in self.agent_runs.values() for r in h.records)

    def busy(self, keys: Mapping[AssetKey, str], exclude_run: str | None = None) -> set[str]:
        held: set[str] = set()
        for run in self.runs:
            if run.status not in FINISHED and run.run_id != exclude_run:
                held |= prompts_of_run(run, keys)
        return held


def prompts_of_run(run: DagsterRun, keys: Mapping[AssetKey, str]) -> set[str]:
    """Prompt ids a run holds: its asset selection, or every prompt of the packet's job."""
    selection = run.asset_selection
    if not selection:
        return set(keys.values())
    return {keys[k] for k in selection if k in keys}


def packet_run_history(instance: DagsterInstance, packet_run: str, keys: Mapping[AssetKey, str]) -> PacketRunHistory:
    records = instance.get_run_records(RunsFilter(tags={tags.PACKET_RUN: packet_run}))
    runs = [r.dagster_run for r in records]
    ended = {r.dagster_run.run_id: r.end_time for r in records if r.end_time}
    agent_runs: dict[str, AgentRunHistory] = {}
    for run in runs:
        for entry in instance.all_logs(run.run_id, of_type=_RECORD_EVENTS):
            event = entry.dagster_event
            if event is None or event.asset_key not in keys:
                continue
            data = event.event_specific_data
            payload = getattr(data, "materialization", None) or getattr(data, "asset_observation", None)
            if payload is None:
                continue
            meta = payload.metadata
            history = agent_runs.setdefault(keys[event.asset_key], AgentRunHistory())
            if plain_value(meta.get("awp/event")) == ATTEMPT_STARTED:
                number = int(str(plain_value(meta.get("awp/attempt_number")) or 0))
                target = Target(str(plain_value(meta.get("awp/provider")) or ""),
                                 _opt(plain_value(meta.get("awp/model"))), _opt(plain_value(meta.get("awp/account"))),
                                 _opt(plain_value(meta.get("awp/effort"))))
                history.started[number] = (run.run_id, str(plain_value(meta.get("awp/mode")) or "run"), target)
            elif "awp/record" in meta:
                data_ = plain_value(meta["awp/record"])
                if isinstance(data_, dict):
                    history.records.append(AttemptRecord.model_validate(data_))
    for history in agent_runs.values():
        unique = {r.identity.number: r for r in history.records}
        history.records = [unique[n] for n in sorted(unique)]
    return PacketRunHistory(packet_run, runs, agent_runs, ended)


def _opt(value: object) -> str | None:
    return str(value) if value not in (None, "", "none", "default") else None


def prompt_states(binding: PacketBinding, history: PacketRunHistory, prompts: Sequence[str] | None = None,
                  exclude_run: str | None = None) -> list[PromptState]:
    """The decision's input for each prompt of the packet run (or of `prompts`)."""
    packet, keys = binding.packet, binding.keys
    finished = history.finished_runs()
    busy = history.busy(keys, exclude_run)
    scope = list(prompts) if prompts is not None else history.scope(packet, keys)
    spent = history.spend()
    control = packet.manifest.agent_control
    states = []
    for pid in scope:
        agent_run = history.agent_runs.get(pid, AgentRunHistory())
        last = agent_run.last_record
        started_runs = [run for run, _, _ in agent_run.started.values()]
        last_run = last.identity.dagster_run if last else (started_runs[-1] if started_runs else None)
        states.append(PromptState(
            prompt=pid, recovery=packet.prompt(pid).recovery, chain=binding.chains[pid],
            deps=tuple(packet.dependencies(packet.prompt(pid))), facts=tuple(agent_run.facts(finished)),
            started=max(agent_run.started, default=0), busy=pid in busy,
            last_ended=_last_ended(last, history.ended_at.get(last_run or "")), last_run=last_run,
            budget=Budget(packet.manifest.budget, packet.prompt(pid).front.budget, spent),
            max_iterations=control.max_iterations if control.enabled else None))
    return states


def _last_ended(record: AttemptRecord | None, run_end: float | None) -> float | None:
    if record is not None:
        return datetime.fromisoformat(record.ended_at).timestamp()
    return run_end


def attempt_outcome(instance: DagsterInstance, run_id: str) -> dict[str, object] | None:
    """The metadata of the run's last Attempt record (a materialization, or an observation when it failed)."""
    outcomes = attempt_outcomes(instance, run_id)
    return outcomes[-1] if outcomes else None


def attempt_outcomes(instance: DagsterInstance, run_id: str) -> list[dict[str, object]]:
    """Every Attempt record's metadata stored by one run, in order."""
    found = []
    for entry in instance.all_logs(run_id, of_type=_RECORD_EVENTS):
        event = entry.dagster_event
        data = event.event_specific_data if event else None
        payload = getattr(data, "materialization", None) or getattr(data, "asset_observation", None)
        if payload is None:
            continue
        meta = {key: plain_value(value) for key, value in payload.metadata.items()}
        if meta.get("awp/result"):
            found.append(meta)
    return found
