"""A packet run's history as a ledger reads it back: its runs (by the `awp/packet_run` tag) and the Attempt
records and start markers they stored, and what every reader derives from it (the decision's inputs, each
AgentRun's state, the packet run's). Budgets are counted from this, never from memory.

`Ledger.history` builds it with `history_of` from what the ledger stored; reads are bounded by the packet run (its
runs, their events), never by the asset's whole history or the whole event log.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from dagster import AssetKey, DagsterRun, DagsterRunStatus, MetadataValue

from awp_pipelines.core.decisions.agent_run import (
    AgentRunStatus,
    DecisionInput,
    PacketRunState,
    agent_run_states,
    packet_run_state,
)
from awp_pipelines.core.decisions.budget import Budget, Spend, total
from awp_pipelines.core.decisions.intent import change_line, superseded_status
from awp_pipelines.core.decisions.policy import AttemptFact, Chain, Target, adopted_fact, interrupted_fact
from awp_pipelines.core.decisions.rotation import Availability
from awp_pipelines.core.decisions.stops import StopMarker
from awp_pipelines.core.engine.attempt_record import AttemptRecord
from awp_pipelines.core.engine.status_report import AttemptSummary
from awp_pipelines.core.packet.packet import Packet
from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.core.records.run_tags import agent_run_id, attempt_id
from awp_pipelines.core.records.workspace import commit_of_attempt
from awp_pipelines.dagster_compat.tags import WORKER_LOSS_ONLY
from awp_pipelines.orchestration.compile.binding import PacketBinding

FINISHED = frozenset({DagsterRunStatus.SUCCESS, DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED})
# A run that has not ended (SUSPENDED aside: nothing of AWP's is ever suspended). Whether its driver still lives
# is liveness.py's.
UNFINISHED = [DagsterRunStatus.QUEUED, DagsterRunStatus.NOT_STARTED, DagsterRunStatus.STARTING,
              DagsterRunStatus.STARTED, DagsterRunStatus.CANCELING]
ATTEMPT_STARTED = "attempt_started"
_RECENT = 200  # packet runs of the packet `latest_history` looks through for the prompt's latest one


# --- a run's packet run -----------------------------------------------------------------------------------------
def own_packet_run(run: DagsterRun) -> str:
    """The packet run a run starts when it joins none: named after the run."""
    return f"pr-{run.run_id[:8]}"


def joining_tags(packet_run: str) -> dict[str, str]:
    """The tags that make a run a run of `packet_run` (`Ledger.join_run`): a run of a job Dagster made has none of
    the packet job's tags, and Dagster's run retries must leave its Attempts' failures to AWP too."""
    return {tags.PACKET_RUN: packet_run, **WORKER_LOSS_ONLY}


# --- an Attempt's start marker, as a ledger stores it ------------------------------------------------------------
def marker_metadata(marker: Mapping[str, object]) -> dict[str, Any]:
    """The stored metadata of a flat marker (tag names → values; `None` and empty values left out): the page link
    (a URL entry, first: the asset page opens the running Attempt in one click) and the rest as one JSON entry
    (`awp/started`). Dagster stores each metadata entry of an observation with ~110 bytes of envelope, so ten
    entries cost about 1.1 KiB more per Attempt than one."""
    fields = {name.removeprefix(tags.PREFIX): getattr(value, "value", value) for name, value in marker.items()
              if name not in (tags.PAGE, tags.EVENT) and value not in (None, "")}
    page = getattr(marker.get(tags.PAGE), "value", marker.get(tags.PAGE))
    return {**({tags.PAGE: MetadataValue.url(str(page))} if page else {}), tags.STARTED: MetadataValue.json(fields)}


def flat(meta: Mapping[str, Any]) -> dict[str, Any]:
    """Stored metadata (plain values) with a start marker's JSON entry spread out as the flat fields readers
    read (`awp/event: attempt_started`, `awp/mode`, …, as markers were stored before), whichever form an instance
    holds; anything else as it is."""
    started = meta.get(tags.STARTED)
    if not isinstance(started, dict):
        return dict(meta)
    rest = {k: v for k, v in meta.items() if k != tags.STARTED}
    return {**rest, tags.EVENT: ATTEMPT_STARTED, **{f"{tags.PREFIX}{name}": v for name, v in started.items()}}


@dataclass
class AgentRunHistory:
    """One AgentRun as stored: its records, and the Attempts started (with where they ran)."""

    records: list[AttemptRecord] = field(default_factory=list)
    started: dict[int, tuple[str, str, Target]] = field(default_factory=dict)  # number → (run id, mode, target)
    intents: dict[int, str] = field(default_factory=dict)  # number → its prompt's fingerprint then (intent.py)

    def facts(self, finished_runs: set[str], committed: Callable[[int], bool] = lambda number: False
              ) -> list[AttemptFact]:
        """Recorded Attempts, plus a fact for each started Attempt whose run ended with no record (its
        process died): `adopted` when its commit exists (`committed`: the trailer names it), so the work
        is never done twice; else `interrupted`, which still counts against the budget."""
        by_number: dict[int, AttemptFact] = {r.identity.number: r.fact() for r in self.records}
        for number, (run_id, mode, target) in self.started.items():
            if number not in by_number and run_id in finished_runs:
                made = committed(number)
                by_number[number] = (adopted_fact if made else interrupted_fact)(number, mode, target)
        return [by_number[n] for n in sorted(by_number)]

    @property
    def last_record(self) -> AttemptRecord | None:
        return self.records[-1] if self.records else None

    def superseded_through(self, intent: str, facts: Sequence[AttemptFact]) -> int:
        """The last Attempt of an earlier AgentRun of the prompt that its definition now (`intent`) supersedes,
        0 for none: the Attempts up to the last one started under another definition, unless they completed
        the prompt and nothing ran since (completed work stays completed; a new packet run runs the change).
        `facts`: this history's facts."""
        through = max((n for n, i in self.intents.items() if i != intent), default=0)
        if through and through == max(self.started, default=0) and facts and facts[-1].done:
            return 0
        return through

    def generation(self, number: int, intent_now: str = "") -> int:
        """Which AgentRun of the prompt Attempt `number` belongs to (1 for the first): one more for each change
        of the stored definition between consecutive started Attempts up to it; a number not started yet is
        compared with the last stored definition through `intent_now`. Derived from stored history alone, so
        every reader and the launch that starts it agree on the id."""
        generation, previous = 1, ""
        for n in sorted(self.started):
            if n > number:
                return generation
            current = self.intents.get(n, "")
            if current and previous and current != previous:
                generation += 1
            previous = current or previous
        if number not in self.started and intent_now and previous and intent_now != previous:
            generation += 1
        return generation

    def after(self, number: int) -> AgentRunHistory:
        """The Attempts after `number`: the AgentRun that began there."""
        return AgentRunHistory([r for r in self.records if r.identity.number > number],
                               {n: s for n, s in self.started.items() if n > number},
                               {n: i for n, i in self.intents.items() if n > number})

    def summaries(self, agent_run: str, finished_runs: set[str], before: int | None = None,
                  committed: Collection[int] = ()) -> list[AttemptSummary]:
        """Every Attempt (those before number `before`, if given; `agent_run`: the id of the prompt's first
        AgentRun, each Attempt's id is its own AgentRun's), oldest first: recorded ones from their
        record; started ones without a record are `interrupted` when their run ended (`completed`, adopted,
        when their number is in `committed`: their commit exists, their record is not written yet), else
        `running`."""
        rows = {r.identity.number: AttemptSummary.of(r) for r in self.records}
        for number, (run_id, mode, target) in self.started.items():
            if number not in rows:
                ended = "completed" if number in committed else "interrupted"
                rows[number] = AttemptSummary(
                    attempt=tags.attempt_id(tags.in_generation(agent_run, self.generation(number)), number),
                    number=number, mode=mode, provider=target.provider,
                    account=target.account, model=target.model or "", dagster_run=run_id,
                    result=ended if run_id in finished_runs else "running", adopted=number in committed,
                    failure_class="interrupted" if run_id in finished_runs and ended != "completed" else None)
        return [rows[n] for n in sorted(rows) if before is None or n < before]


@dataclass
class PacketRunHistory:
    packet_run: str
    runs: list[DagsterRun]
    agent_runs: dict[str, AgentRunHistory]  # prompt id → its AgentRun in this packet run
    ended_at: dict[str, float]  # run id → end time (epoch seconds)
    # accounts → their stored cooldowns and usage now (read from the instance, shared by every process)
    accounts_of: Callable[[Iterable[str]], Availability] = lambda accounts: Availability()
    stopped: StopMarker | None = None  # the user's stop of the packet run, while it stands
    # run id → why: runs Dagster says have not ended whose driver is gone (liveness.py); every reader counts
    # them ended, so their Attempts read `interrupted` at once, before anything reaps them
    gone: dict[str, str] = field(default_factory=dict)

    def agent_run_of(self, prompt: str, number: int, intent_now: str = "") -> str:
        """The id of the AgentRun Attempt `number` of `prompt` belongs to (AgentRunHistory.generation)."""
        whole = self.agent_runs.get(prompt, AgentRunHistory())
        return agent_run_id(self.packet_run, prompt, whole.generation(number, intent_now))

    def attempt_of(self, prompt: str, number: int, intent_now: str = "") -> str:
        return attempt_id(self.agent_run_of(prompt, number, intent_now), number)

    def finished_runs(self) -> set[str]:
        return {r.run_id for r in self.runs if r.status in FINISHED} | set(self.gone)

    def unfinished_runs(self) -> list[DagsterRun]:
        """The runs that have not ended and whose driver lives."""
        return [r for r in self.runs if r.status not in FINISHED and r.run_id not in self.gone]

    def scope(self, packet: Packet, keys: Mapping[AssetKey, str]) -> list[str]:
        """The prompts this packet run was asked to run, in packet order: its runs' selections, and every prompt
        it holds an Attempt of (a run the database lost, whose Attempt came back adopted from its commit,
        adoption.py, still had it in its selection)."""
        selected = {prompt for prompt, agent_run in self.agent_runs.items() if agent_run.records or agent_run.started}
        for run in self.runs:
            selected |= prompts_of_run(run, keys)
        return [p.id for p in packet.prompts if p.id in selected]

    def spend(self) -> Spend:
        """The packet run's recorded spend: every stored Attempt record of every prompt."""
        return total(r.fact().spend for h in self.agent_runs.values() for r in h.records)

    def busy(self, keys: Mapping[AssetKey, str], exclude_run: str | None = None) -> set[str]:
        held: set[str] = set()
        for run in self.unfinished_runs():
            if run.run_id != exclude_run:
                held |= prompts_of_run(run, keys)
        return held


def prompts_of_run(run: DagsterRun, keys: Mapping[AssetKey, str]) -> set[str]:
    """Prompt ids a run holds: its asset selection, or every prompt of the packet's job."""
    selection = run.asset_selection
    if not selection:
        return set(keys.values())
    return {keys[k] for k in selection if k in keys}


def history_of(packet_run: str, runs: list[DagsterRun], ended: dict[str, float],
               events: Iterable[tuple[str, AssetKey, Mapping[str, object]]], keys: Mapping[AssetKey, str],
               accounts_of: Callable[[Iterable[str]], Availability], stopped: StopMarker | None,
               gone: dict[str, str]) -> PacketRunHistory:
    """The packet run's history from what a ledger stored: its runs, their end times, and its prompts' start
    markers and records as (run id, asset, metadata as plain values), in the order they were stored."""
    agent_runs: dict[str, AgentRunHistory] = {}
    for run_id, key, stored in events:
        history = agent_runs.setdefault(keys[key], AgentRunHistory())
        meta = flat(stored)
        if meta.get(tags.EVENT) == ATTEMPT_STARTED:
            number = int(str(meta.get(tags.ATTEMPT_NUMBER) or 0))
            target = Target(str(meta.get(tags.PROVIDER) or ""), _opt(meta.get(tags.MODEL)),
                            _opt(meta.get(tags.ACCOUNT)), _opt(meta.get(tags.EFFORT)))
            history.started[number] = (run_id, str(meta.get(tags.MODE) or "run"), target)
            if meta.get(tags.INTENT):
                history.intents[number] = str(meta[tags.INTENT])
        elif isinstance(meta.get(tags.RECORD), dict):
            history.records.append(AttemptRecord.model_validate(meta[tags.RECORD]))
    for history in agent_runs.values():
        unique = {r.identity.number: r for r in history.records}
        history.records = [unique[n] for n in sorted(unique)]
    return PacketRunHistory(packet_run, runs, agent_runs, ended, accounts_of, stopped, gone)


def _opt(value: object) -> str | None:
    return str(value) if value not in (None, "", "none", "default") else None


def decision_inputs(binding: PacketBinding, history: PacketRunHistory, prompts: Sequence[str] | None = None,
                  exclude_run: str | None = None) -> list[DecisionInput]:
    """The decision's input for each prompt of the packet run (or of `prompts`)."""
    packet, keys = binding.packet, binding.keys
    finished = history.finished_runs()
    busy = history.busy(keys, exclude_run)
    scope = list(prompts) if prompts is not None else history.scope(packet, keys)
    spent = history.spend()
    control = packet.manifest.agent_control
    states = []
    for pid in scope:
        whole = history.agent_runs.get(pid, AgentRunHistory())
        committed = _committed_in(binding, pid, history)
        # A changed definition starts a new AgentRun: its facts (and its budget) begin after the old one's.
        superseded = whole.superseded_through(binding.intents[pid], whole.facts(finished, committed))
        agent_run = whole.after(superseded)
        last = agent_run.last_record
        started_runs = [run for run, _, _ in agent_run.started.values()]
        last_run = last.identity.dagster_run if last else (started_runs[-1] if started_runs else None)
        accounts = history.accounts_of({c.account for c in binding.chains[pid].candidates() if c.account})
        states.append(DecisionInput(
            prompt=pid, recovery=packet.prompt(pid).recovery, chain=_independent(binding, history, pid),
            deps=tuple(packet.dependencies(packet.prompt(pid))),
            facts=tuple(agent_run.facts(finished, committed)), superseded=superseded,
            generation=whole.generation(superseded + 1 if superseded else max(whole.started, default=1),
                                        binding.intents[pid]),
            started=max(whole.started, default=0), busy=pid in busy,
            last_ended=_last_ended(last, history.ended_at.get(last_run or "")), last_run=last_run,
            budget=Budget(packet.manifest.budget, packet.prompt(pid).front.budget, spent),
            max_iterations=control.max_iterations if control.enabled else None, accounts=accounts))
    return states


def _independent(binding: PacketBinding, history: PacketRunHistory, prompt: str) -> Chain:
    """The prompt's chain, kept off every provider and account the coders it reviews used in this packet run
    (each Attempt they started, recorded or not)."""
    chain = binding.chains[prompt]
    used = frozenset((target.provider, target.account) for coder in binding.plans[prompt].independent_of
                     for _, _, target in history.agent_runs.get(coder, AgentRunHistory()).started.values())
    return replace(chain, excluded=used) if used else chain


def agent_run_truth(binding: PacketBinding, history: PacketRunHistory, also: Collection[str] = (),
                    exclude_run: str | None = None) -> tuple[dict[str, DecisionInput], dict[str, AgentRunStatus]]:
    """Each AgentRun of the packet run (its scope, and the prompts `also` about to join it, in packet order):
    the decision's input and its state, the one answer every reader gives (agent_run.py). `exclude_run`: the
    run asking, which does not hold its own prompts back."""
    packet = binding.packet
    wanted = set(history.scope(packet, binding.keys)) | set(also)
    states = decision_inputs(binding, history, [p.id for p in packet.prompts if p.id in wanted], exclude_run)
    return {s.prompt: s for s in states}, agent_run_states(states, history.stopped)


def driven_state(history: PacketRunHistory, statuses: Mapping[str, AgentRunStatus]) -> tuple[PacketRunState, str]:
    """The packet run's state as every view says it: `packet_run_state`, except that prompts due while no run
    is driven and a run's driver is gone (its `awp run` killed between two Attempts, before any reap) read
    `interrupted`, not `running`: nothing will start them until `awp resume` (or, under a daemon, the recovery
    sensor once housekeeping has reaped the run)."""
    state, reason = packet_run_state(statuses)
    if state == "running" and history.gone and not history.unfinished_runs():
        gone = "; ".join(f"run {run_id[:8]}: {why}" for run_id, why in history.gone.items())
        return "interrupted", f"{reason} — {gone}"
    return state, reason


def superseded_runs(binding: PacketBinding, history: PacketRunHistory,
                    states: Mapping[str, DecisionInput]) -> dict[str, AgentRunStatus]:
    """Prompt → the state of its earlier AgentRun in the packet run, ended by a change of its definition."""
    return {pid: superseded_status(s.superseded, history.agent_runs[pid].intents.get(s.superseded, ""),
                                   binding.intents[pid]) for pid, s in states.items() if s.superseded}


def superseded_ids(history: PacketRunHistory, states: Mapping[str, DecisionInput]) -> dict[str, str]:
    """Prompt → the id of its earlier AgentRun that a change of its definition ended (its last Attempt's)."""
    return {pid: history.agent_run_of(pid, s.superseded) for pid, s in states.items() if s.superseded}


def current_ids(history: PacketRunHistory, states: Mapping[str, DecisionInput]) -> dict[str, str]:
    """Prompt → the id of its current AgentRun."""
    return {pid: agent_run_id(history.packet_run, pid, s.generation) for pid, s in states.items()}


def intent_changes(binding: PacketBinding, history: PacketRunHistory,
                   statuses: Mapping[str, AgentRunStatus]) -> list[str]:
    """One line per prompt whose definition changed since its last Attempt in the packet run: what a resume
    says before it starts."""
    lines = []
    for pid, agent_run in history.agent_runs.items():
        last = max(agent_run.intents, default=0)
        line = change_line(pid, agent_run.intents[last], binding.intents[pid],
                           pid in statuses and statuses[pid].done) if last else None
        if line:
            lines.append(line)
    return lines


def _committed_in(binding: PacketBinding, prompt: str, history: PacketRunHistory) -> Callable[[int], bool]:
    """Whether Attempt n of the prompt's AgentRun left a commit in one of its target repos."""
    repos = [Path(t.path) for t in binding.plans[prompt].repos]

    def committed(number: int) -> bool:
        attempt = history.attempt_of(prompt, number)
        return any(commit_of_attempt(repo, attempt) for repo in repos if (repo / ".git").exists())

    return committed


def _last_ended(record: AttemptRecord | None, run_end: float | None) -> float | None:
    if record is not None:
        return datetime.fromisoformat(record.ended_at).timestamp()
    return run_end


class _PacketRuns(Protocol):
    """What `latest_history` reads of a ledger (ledger.py imports this module, not the reverse)."""

    def packet_runs(self, packet: str) -> list[str]: ...

    def history(self, packet_run: str, keys: Mapping[AssetKey, str]) -> PacketRunHistory: ...


def latest_history(ledger: _PacketRuns, packet: str, keys: Mapping[AssetKey, str],
                   prompt: str) -> PacketRunHistory | None:
    """`Ledger.latest_history`, for every ledger: the packet's packet runs newest first (its index), each read
    until one holds an Attempt record of the prompt."""
    for packet_run in ledger.packet_runs(packet)[:_RECENT]:
        history = ledger.history(packet_run, keys)
        if prompt in history.agent_runs and history.agent_runs[prompt].records:
            return history
    return None
