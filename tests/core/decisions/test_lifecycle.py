"""AgentRun state from stored history and the decision; Attempt transitions and their reasons."""

from __future__ import annotations

from awp_pipelines.core.decisions.agent_run import DecisionInput, agent_run_status
from awp_pipelines.core.decisions.budget import Budget, Spend
from awp_pipelines.core.decisions.policy import AttemptFact, chain_of
from awp_pipelines.core.packet.model.budget import BudgetConfig
from awp_pipelines.core.packet.model.recovery import RecoveryConfig
from awp_pipelines.core.records.attempt_lifecycle import Transition, cause_of, cause_shown, trail_text

CHAIN = chain_of("simulated", "m", None, [], [])
RECOVERY = RecoveryConfig()


def _fact(number: int, result: str, cls: str | None = None, retryable: bool = False) -> AttemptFact:
    return AttemptFact(number=number, mode="run", result=result, failure_class=cls, retryable=retryable,
                       provider="simulated", model="m")


def _status(*facts: AttemptFact, started: int | None = None, busy: bool = False, budget: Budget = Budget()):
    state = DecisionInput("01", RECOVERY, CHAIN, (), tuple(facts), len(facts) if started is None else started,
                        busy, 100.0 if facts else None, budget=budget)
    return agent_run_status(state)


def test_an_agent_run_goes_planned_queued_active_then_waits_with_the_failures_cause() -> None:
    assert _status().state == "planned"
    assert _status(busy=True).state == "queued"
    assert _status(busy=True, started=1).state == "active"
    waiting = _status(_fact(1, "provider_failed", "provider_rate_limit", retryable=True))
    assert (waiting.state, waiting.cause) == ("waiting", "model_capacity")
    outage = _status(_fact(1, "provider_failed", "transport_disconnect", retryable=True))
    assert (outage.state, outage.cause) == ("waiting", "provider_outage")
    assert _status(_fact(1, "verification_failed")).state == "waiting"  # a repair comes next


def test_an_agent_run_ends_completed_failed_cancelled_or_budget_exhausted() -> None:
    assert _status(_fact(1, "completed")).state == "completed"
    failed = _status(_fact(1, "verifier_fault", "verifier_fault"))
    assert (failed.state, failed.cause) == ("failed", "workspace_failure")
    # A person's cancel stops the packet run (a stop marker, stops.py): the AgentRun waits for a resume.
    cancelled = _status(_fact(1, "provider_failed", "user_cancelled"))
    assert (cancelled.state, cancelled.cause) == ("waiting", "cancellation")
    broke = Budget(packet=BudgetConfig(max_cost_usd=0.05), packet_spent=Spend(0.06))
    exhausted = _status(_fact(1, "verification_failed"), budget=broke)
    assert (exhausted.state, exhausted.cause) == ("budget_exhausted", "policy_denial")
    assert "$0.0600 of its $0.05 cap" in exhausted.reason
    assert _status(budget=broke).state == "budget_exhausted"  # never started: refused before its first Attempt


def test_a_rate_limit_is_said_as_one_beside_its_state_not_as_model_capacity() -> None:
    """`awp status` printed "waiting (model_capacity)" for a quota: the category stays in --json and metadata."""
    assert cause_of("provider_rate_limit") == "model_capacity"
    assert cause_shown("model_capacity", "provider_rate_limit") == "rate limit"
    assert cause_shown("model_capacity", "provider_capacity") == "model_capacity"
    assert cause_shown("provider_outage", None) == "provider_outage"


def test_failure_classes_map_to_the_seeds_reasons() -> None:
    assert cause_of("provider_capacity") == "model_capacity"
    assert cause_of("approval_denied") == "policy_denial"
    assert cause_of("commit_failed") == "workspace_failure"
    assert cause_of("interrupted") == "cancellation"
    assert cause_of(None) is None


def test_an_attempts_trail_reads_as_one_line_ending_in_its_reason() -> None:
    trail = [Transition(state=s, at="2026-11-30T00:00:00+00:00") for s in ("created", "provisioning", "running",
                                                                             "checkpointing")]
    trail.append(Transition(state="terminal", at="2026-11-30T00:00:01+00:00", reason="provider_failed",
                            cause="cancellation"))
    assert trail_text(trail) == "created → provisioning → running → checkpointing → terminal (cancellation)"
