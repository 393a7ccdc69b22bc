"""What to launch next in a packet run, from its stored history. Pure: no Dagster, no clock of its own.

The one function both drivers use. Under the daemon, the recovery sensor turns each due `Launch` into a
`RunRequest`; `awp run` executes the same launches in process. Dependency order inside one launch of
several prompts is Dagster's; this only says which AgentRuns go on once a run has ended: a retry,
fallback or repair of an unfinished AgentRun (the decision function says which), or the first Attempt
of a prompt whose upstream prompts have now completed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from awp_pipelines.core.decisions.agent_run import DecisionInput, StopMarker, agent_run_states
from awp_pipelines.core.decisions.policy import Target, Verdict, first_target, next_in_turn
from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.core.records.run_tags import Mode

PRIMARY_REASON = "primary target of the plan"


@dataclass(frozen=True)
class Launch:
    """One Attempt to start: a run of one prompt, with the identity its tags carry."""

    prompt: str
    number: int
    mode: Mode
    reason: str
    target: Target
    parent_run: str | None = None
    due_at: float = 0.0

    def run_tags(self, packet_run: str) -> dict[str, str]:
        """What a user filters its run by (`tags.RUN_TAGS`), and its account, which the run queue limits to one
        run at a time (dagster.yaml); the Attempt itself is in its metadata. Written, never read back: the launch
        reaches the compute as the run's config (attempt_config.py)."""
        return tags.tag_values({tags.PACKET_RUN: packet_run, tags.ACCOUNT: self.target.account})


@dataclass(frozen=True)
class Outlook:
    """What a packet run does next: launches due now, launches waiting for their backoff, and AgentRuns
    that ended without completing (with the decision's reason)."""

    due: list[Launch] = field(default_factory=list)
    waiting: list[Launch] = field(default_factory=list)
    ended: dict[str, str] = field(default_factory=dict)
    ended_status: dict[str, str] = field(default_factory=dict)  # prompt → the verdict's status

    @property
    def idle(self) -> bool:
        return not self.due and not self.waiting


def first_launch(state: DecisionInput, reason: str = PRIMARY_REASON) -> Launch:
    pick = first_target(state.chain, state.accounts)
    # Every account of the chain rests: the Attempt waits for the first back, not started on a resting one.
    due = (state.accounts.now_ms + pick.wait_ms) / 1000 if pick.wait_ms else 0.0
    return Launch(state.prompt, state.started + 1, state.first_mode, reason + (f"; {pick.why}" if pick.why else ""),
                  pick.target, due_at=due)


def continuation(state: DecisionInput) -> Launch | Verdict:
    """The next Attempt of an AgentRun that has history, or the terminal verdict that ends it."""
    verdict = state.verdict()
    if verdict.terminal or verdict.action == "complete":
        return verdict
    last = state.facts[-1]
    reason = verdict.reason
    target = verdict.target
    if target is None:  # on the same target: the account may move on (between_attempts)
        pick = next_in_turn(state.chain, last.target, state.accounts)
        target, reason = pick.target, reason + (f"; {pick.why}" if pick.why else "")
    mode: Mode = verdict.action if verdict.action in ("retry", "fallback", "repair", "iterate") else "retry"
    due = (state.last_ended or 0.0) + verdict.delay_ms / 1000
    return Launch(state.prompt, state.started + 1, mode, reason, target, state.last_run, due)


def next_launches(states: Sequence[DecisionInput], now: float, stopped: StopMarker | None = None) -> Outlook:
    """Every AgentRun of the packet run that can go on, and when, as its state (agent_run.py) says: nothing
    for a stopped packet run, no first Attempt before its upstream prompts completed, none after an agent
    finished the run. Launches decided together count each other's use of an account, so a rotation spreads
    them as it would spread them one by one."""
    statuses = agent_run_states(states, stopped)
    outlook = Outlook()
    chosen: list[str | None] = []  # the accounts of the launches due so far
    for state in states:
        status = statuses[state.prompt]
        if status.ended and not status.done:
            outlook.ended[state.prompt] = status.reason
            outlook.ended_status[state.prompt] = (state.verdict().status if state.facts else "") or status.state
        if state.busy or status.ended or status.state == "stopped":
            continue
        for account in chosen:
            state = replace(state, accounts=state.accounts.after_use(account))
        if not state.facts and not status.startable:
            continue
        step = continuation(state) if state.facts else first_launch(
            state, PRIMARY_REASON if not state.deps else f"upstream {', '.join(state.deps)} completed")
        if isinstance(step, Verdict):
            continue
        (outlook.due if step.due_at <= now else outlook.waiting).append(step)
        if step.due_at <= now:
            chosen.append(step.target.account)
    return outlook


def manual_launch(state: DecisionInput) -> Launch:
    """A run of this prompt launched by a person (re-execution, a materialization from the UI): the
    AgentRun goes on as the decision says, or, when the decision had ended it, once more by hand."""
    if not state.facts:
        return first_launch(state)
    step = continuation(state)
    if isinstance(step, Launch):
        return replace(step, due_at=0.0)
    last = state.facts[-1]
    if last.result == "completed":
        return Launch(state.prompt, state.started + 1, state.first_mode, "launched again by hand",
                      state.facts[-1].target, state.last_run)
    mode: Mode = "repair" if last.result == "verification_failed" else "retry"
    return Launch(state.prompt, state.started + 1, mode, f"launched by hand after: {step.reason}",
                  state.facts[-1].target, state.last_run)


def repair_launch(state: DecisionInput, note: str | None = None) -> Launch | None:
    """A repair Attempt asked for by a person (`awp repair`, a UI launch tagged `awp/mode=repair`): the
    AgentRun's next Attempt, on its last target, whatever the decision said. None before any record."""
    if not state.facts:
        return None
    reason = "repair launched by hand" + (f": {note}" if note else "")
    return Launch(state.prompt, state.started + 1, "repair", reason, state.facts[-1].target, state.last_run)

