"""An AgentRun's state, defined once. Pure: no Dagster, no clock.

An AgentRun is one prompt of one packet run. Its state is derived, never stored: from the stored history
(records, start markers, Attempts adopted from their commits, agent-control outcomes), the upstream prompts'
states in the same packet run, and the user's stop of the packet run. `awp run`'s summary, `awp status`,
`awp watch`, `--remaining`, the recovery sensor, the asset compute and the UI all read `agent_run_states`,
so a status word means the same thing everywhere:

planned → queued → active → waiting → completed | cancelled | failed | blocked | budget_exhausted (the seed's),
plus `interrupted` (its last Attempt's process died or was stopped; it has budget left: a resume continues it)
and `stopped` (an unfinished AgentRun of a packet run the user stopped: nothing launches it until resumed).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from awp_pipelines.core.decisions.budget import Budget, total
from awp_pipelines.core.decisions.policy import NO_TARGET, AttemptFact, Chain, Verdict, decide
from awp_pipelines.core.decisions.rotation import Availability
from awp_pipelines.core.decisions.stops import StopMarker
from awp_pipelines.core.packet.model.recovery import RecoveryConfig
from awp_pipelines.core.records.attempt_lifecycle import Cause, cause_of
from awp_pipelines.core.records.plural import counted
from awp_pipelines.core.records.run_tags import Mode

AgentRunState = Literal["planned", "queued", "active", "waiting", "interrupted", "stopped", "completed",
                        "cancelled", "failed", "blocked", "budget_exhausted"]
# The packet run as a whole, from its AgentRuns' states.
PacketRunState = Literal["not_started", "running", "interrupted", "stopped", "completed", "blocked", "failed"]
ENDED: frozenset[str] = frozenset({"completed", "cancelled", "failed", "blocked", "budget_exhausted"})
UNFINISHED_BY_HAND: frozenset[str] = frozenset({"interrupted", "stopped"})  # a resume continues them


@dataclass(frozen=True)
class DecisionInput:
    """One prompt of a packet run, as the stored history says: what the decision function and its AgentRun's
    state are computed from (not a state itself: that is `AgentRunState`, with its reason `AgentRunStatus`)."""

    prompt: str
    recovery: RecoveryConfig
    chain: Chain
    deps: tuple[str, ...] = ()
    facts: tuple[AttemptFact, ...] = ()  # finished Attempts of its AgentRun, oldest first
    started: int = 0  # Attempts started, recorded or not: every started Attempt counts
    busy: bool = False  # a run that holds this prompt has not ended yet
    last_ended: float | None = None  # epoch seconds the last Attempt ended (backoff counts from it)
    last_run: str | None = None  # the Dagster run of the last Attempt: the parent of the next
    budget: Budget = Budget()  # caps, and the packet run's recorded spend (the AgentRun's is in `facts`)
    max_iterations: int | None = None  # set when the agent steers its iterations (agent_control)
    accounts: Availability = Availability()  # the chain's accounts' stored cooldowns and usage right now
    superseded: int = 0  # the last Attempt of an earlier AgentRun of the prompt, whose definition changed since
    generation: int = 1  # which AgentRun of the prompt this is (2 after one change of definition): part of its id

    @property
    def completed(self) -> bool:
        return bool(self.facts) and self.facts[-1].done

    @property
    def first_mode(self) -> Mode:
        """Under agent control every iteration, the first included, is an Attempt in mode `iterate`."""
        return "iterate" if self.max_iterations is not None else "run"

    def verdict(self) -> Verdict:
        # Jitter seeded by the Attempt it delays: every sensor tick computes the same due time.
        rng = random.Random(f"{self.prompt}.{self.started}")
        return decide(list(self.facts), self.recovery, self.chain, rng, self.spending(), self.max_iterations,
                      self.accounts)

    def spending(self) -> Budget:
        return replace(self.budget, agent_run_spent=total(f.spend for f in self.facts))


@dataclass(frozen=True)
class AgentRunStatus:
    state: AgentRunState
    reason: str = ""
    cause: Cause | None = None
    held_by: tuple[str, ...] = ()  # planned: the upstream prompts not completed in this packet run
    finished_by: str | None = None  # the prompt whose agent finished the packet run (`finish`)
    next_mode: str | None = None  # waiting: the mode of the Attempt the decision planned (repair, retry…)

    @property
    def ended(self) -> bool:
        return self.state in ENDED

    @property
    def done(self) -> bool:
        """Nothing is left to do for it: completed, or not needed because an agent finished the run."""
        return self.state == "completed" or (self.state == "cancelled" and self.finished_by is not None)

    @property
    def startable(self) -> bool:
        """Its first Attempt may launch now: planned, nothing upstream holding it."""
        return self.state == "planned" and not self.held_by

    @property
    def text(self) -> str:
        return self.state + (f" — {self.reason}" if self.reason else "")


def agent_run_states(states: Sequence[DecisionInput], stopped: StopMarker | None = None) -> dict[str, AgentRunStatus]:
    """Every AgentRun of the packet run (the prompts of `states`, in packet order): its state and why.
    A prompt's upstream outside `states` counts as not completed (it did not run in this packet run)."""
    out: dict[str, AgentRunStatus] = {}
    # An accepted `finish` ends the linear run: the prompts after it are not needed.
    finisher = next((s.prompt for s in states if s.facts and s.facts[-1].done and s.facts[-1].directive == "finish"),
                    None)
    order = [s.prompt for s in states]
    for state in states:
        after_finish = finisher is not None and order.index(state.prompt) > order.index(finisher)
        upstream = {d: out[d] for d in state.deps if d in out}
        out[state.prompt] = agent_run_status(state, upstream, stopped, finisher if after_finish else None)
    return out


def agent_run_status(state: DecisionInput, upstream: Mapping[str, AgentRunStatus] | None = None,
                     stopped: StopMarker | None = None, finished_by: str | None = None) -> AgentRunStatus:
    """One AgentRun: `upstream` are the states of its upstream prompts in the packet run (one missing did not run
    in it); `finished_by` is set when an earlier prompt's agent finished the packet run."""
    facts = state.facts
    if state.busy:
        if state.started - state.superseded > len(facts):
            return AgentRunStatus("active", f"attempt {state.started} is running")
        return AgentRunStatus("queued", "launched; its Attempt has not started")
    if not facts:
        waiting = _not_started(state, upstream or {}, stopped, finished_by)
        if waiting.startable and state.chain.denied:
            return AgentRunStatus("failed", state.chain.denied, "policy_denial")
        return waiting
    verdict = state.verdict()
    last = facts[-1]
    if verdict.action == "complete":
        finish = " (the agent finished the packet run)" if last.directive == "finish" else ""
        return AgentRunStatus("completed", verdict.reason + finish)
    if verdict.action == "blocked":
        return AgentRunStatus("blocked", verdict.reason, "human_wait")
    if verdict.status == "budget_exhausted":
        return AgentRunStatus("budget_exhausted", verdict.reason, "policy_denial")
    if verdict.terminal:
        cause = ("policy_denial" if verdict.status == "policy_denial" else
                 "provider_outage" if verdict.status == NO_TARGET else cause_of(last.failure_class))
        return AgentRunStatus("failed", verdict.reason, cause)
    if stopped is not None:
        return AgentRunStatus("stopped", _stopped_text(stopped, f"resumable: {verdict.reason}"), "cancellation")
    if last.failure_class == "interrupted":
        return AgentRunStatus("interrupted", f"attempt {last.number} was interrupted; resumable: {verdict.reason}",
                              "cancellation")
    return AgentRunStatus("waiting", verdict.reason, cause_of(last.failure_class), next_mode=verdict.action)


AWP_RUN_LAUNCHES = "`awp run`, which drives this packet run, launches it"
SENSOR_LAUNCHES = ("the daemon's recovery sensor (awp_recovery) launches it; with no daemon, "
                   "`awp resume <packet folder> --packet-run {packet_run}` does")


def next_step(status: AgentRunStatus, number: int, launcher: str) -> str | None:
    """The one line a failed Attempt ends with when its AgentRun goes on: what comes next and who launches it
    (`launcher`: AWP_RUN_LAUNCHES or SENSOR_LAUNCHES). None when nothing follows (done, failed, stopped…)."""
    if status.state != "waiting" or not status.next_mode:
        return None
    return f"{status.next_mode} next — Attempt {number + 1} ({status.reason}); {launcher}"


def _not_started(state: DecisionInput, upstream: Mapping[str, AgentRunStatus], stopped: StopMarker | None,
                 finished_by: str | None) -> AgentRunStatus:
    if finished_by is not None:
        return AgentRunStatus("cancelled", f"not needed: the agent of {finished_by} finished the packet run",
                              finished_by=finished_by)
    held = tuple(d for d in state.deps if d not in upstream or not upstream[d].done)
    if held:
        why = "; ".join(f"{d} {upstream[d].state}" if d in upstream else f"{d} not in this packet run" for d in held)
        return AgentRunStatus("planned", f"held: upstream {why}", held_by=held)
    if stopped is not None:
        return AgentRunStatus("stopped", _stopped_text(stopped, "resumable: its first Attempt"), "cancellation")
    over = state.spending().exhausted()
    if over is not None:
        return AgentRunStatus("budget_exhausted", over, "policy_denial")
    return AgentRunStatus("planned", "no Attempt yet")


def _stopped_text(stopped: StopMarker, rest: str) -> str:
    return f"the packet run was stopped by {stopped.by}" + (f" ({stopped.reason})" if stopped.reason else "") \
        + f"; {rest}"


def resumable_prompts(statuses: Mapping[str, AgentRunStatus]) -> list[str]:
    """The AgentRuns a resume (`awp run --packet-run`) would go on with: every one not ended, except those held
    by an upstream that ended without completing (only a repair of that upstream frees them)."""
    def stuck(prompt: str, seen: frozenset[str] = frozenset()) -> bool:
        status = statuses[prompt]
        return status.ended and not status.done or any(
            d in statuses and d not in seen and stuck(d, seen | {prompt}) for d in status.held_by)
    return [p for p, s in statuses.items() if not s.ended and not any(
        d not in statuses or stuck(d) for d in s.held_by)]


def packet_run_state(statuses: Mapping[str, AgentRunStatus]) -> tuple[PacketRunState, str]:
    """The packet run from its AgentRuns: running while one is active, queued, waiting or startable; else
    stopped / interrupted (a resume continues them), else completed, blocked or failed."""
    if not statuses:
        return "not_started", "no prompt of the packet run has run"
    states = [s.state for s in statuses.values()]
    resumable = resumable_prompts(statuses)
    if {"active", "queued", "waiting"} & set(states):
        return "running", ""
    if "stopped" in states:
        return "stopped", f"resumable: {counted(len(resumable), 'prompt')}"
    if "interrupted" in states:
        return "interrupted", f"resumable: {counted(len(resumable), 'prompt')}"
    if any(s.startable for s in statuses.values()):
        return "running", f"due: {', '.join(p for p, s in statuses.items() if s.startable)}"
    if all(s.done for s in statuses.values()):
        return "completed", ""
    failed = [p for p, s in statuses.items() if s.ended and not s.done]
    if failed and all(statuses[p].state == "blocked" for p in failed):
        return "blocked", f"blocked: {', '.join(failed)}"
    return "failed", f"ended without completing: {', '.join(failed)}" if failed else ""
