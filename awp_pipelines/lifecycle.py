"""The lifecycles of seed awp-agents-domain: an Attempt's transitions and an AgentRun's state. Pure.

Attempt: created → provisioning → running → checkpointing → terminal, each transition stored in its
record with the time and the reason. AgentRun: planned → queued → active → waiting → completed |
cancelled | failed | blocked | budget_exhausted, derived (never stored) from the stored records and the
decision function, so both drivers, `awp run`'s output and the UI say the same thing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from awp_pipelines.launches import PromptState

AttemptState = Literal["created", "provisioning", "running", "checkpointing", "terminal"]
AgentRunState = Literal["planned", "queued", "active", "waiting", "completed", "cancelled", "failed", "blocked",
                        "budget_exhausted"]
Cause = Literal["model_capacity", "tool_wait", "human_wait", "workspace_failure", "provider_outage",
                "policy_denial", "cancellation"]

_CAUSES: dict[str, Cause] = {
    "provider_capacity": "model_capacity", "provider_rate_limit": "model_capacity",
    "protocol_error": "provider_outage", "transport_disconnect": "provider_outage",
    "transport_timeout": "provider_outage", "provider_runtime_claim": "provider_outage",
    "provider_config_claim": "provider_outage", "provider_auth_claim": "provider_outage",
    "unknown": "provider_outage",
    "approval_denied": "policy_denial", "guardrail_blocked": "policy_denial",
    "cli_confirmation_missing": "policy_denial", "cli_confirmation_mismatch": "policy_denial",
    "user_cancelled": "cancellation", "interrupted": "cancellation",
    "verifier_fault": "workspace_failure", "verifier_timeout": "workspace_failure",
    "commit_failed": "workspace_failure", "launch_failed": "workspace_failure", "dirty_tree": "workspace_failure",
}


def cause_of(failure_class: str | None) -> Cause | None:
    """The lifecycle reason a failure class stands for (None: no failure, or the contract was unmet)."""
    return _CAUSES.get(failure_class) if failure_class else None


class Transition(BaseModel):
    """One step of an Attempt's lifecycle."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    state: AttemptState
    at: str = Field(description="ISO time the Attempt entered the state.")
    reason: str = Field("", description="Why, in words.")
    cause: Cause | None = Field(None, description="The lifecycle reason, when one applies.")


def transition(state: AttemptState, reason: str = "", cause: Cause | None = None) -> Transition:
    return Transition(state=state, at=datetime.now(UTC).isoformat(timespec="milliseconds"), reason=reason,
                      cause=cause)


def trail_text(transitions: list[Transition]) -> str:
    """`created → provisioning → … → terminal (reason)`: one short line for metadata and run output."""
    if not transitions:
        return ""
    last = transitions[-1]
    why = last.cause or last.reason
    return " → ".join(t.state for t in transitions) + (f" ({why})" if why else "")


@dataclass(frozen=True)
class AgentRunStatus:
    state: AgentRunState
    reason: str = ""
    cause: Cause | None = None


def agent_run_status(state: PromptState) -> AgentRunStatus:
    """Where an AgentRun stands, from its stored history and what the decision function says of it."""
    facts = state.facts
    if state.busy:
        if state.started > len(facts):
            return AgentRunStatus("active", f"attempt {state.started} is running")
        return AgentRunStatus("queued", "launched; its Attempt has not started")
    if not facts:
        over = state.spending().exhausted()
        if over is not None:
            return AgentRunStatus("budget_exhausted", over, "policy_denial")
        return AgentRunStatus("planned", "no Attempt yet")
    verdict = state.verdict()
    last = facts[-1]
    if verdict.action == "complete":
        return AgentRunStatus("completed", verdict.reason)
    if verdict.action == "blocked":
        return AgentRunStatus("blocked", verdict.reason, "human_wait")
    if verdict.status == "budget_exhausted":
        return AgentRunStatus("budget_exhausted", verdict.reason, "policy_denial")
    if verdict.status == "cancelled":
        return AgentRunStatus("cancelled", verdict.reason, "cancellation")
    if verdict.terminal:
        return AgentRunStatus("failed", verdict.reason, cause_of(last.failure_class))
    return AgentRunStatus("waiting", verdict.reason, cause_of(last.failure_class))
