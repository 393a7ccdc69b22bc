"""The lifecycle of seed awp-agents-domain's Attempt, and the causes its transitions name. Pure.

Attempt: created → provisioning → running → checkpointing → terminal, each transition stored in its
record with the time and the reason. An AgentRun's state is derived, never stored: agent_run.py.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

AttemptState = Literal["created", "provisioning", "running", "checkpointing", "terminal"]
# The seed's lifecycle reasons but "tool wait": nothing in AWP waits on a tool outside an Attempt (a tool call
# is part of the Attempt's `running`; one that hangs ends in the idle bound, transport_timeout → provider_outage).
Cause = Literal["model_capacity", "human_wait", "workspace_failure", "provider_outage", "policy_denial",
                "cancellation"]

_CAUSES: dict[str, Cause] = {
    "provider_capacity": "model_capacity", "provider_rate_limit": "model_capacity",
    "protocol_error": "provider_outage", "transport_disconnect": "provider_outage",
    "transport_timeout": "provider_outage", "provider_runtime_claim": "provider_outage",
    "provider_config_claim": "provider_outage", "provider_auth_claim": "provider_outage",
    "unknown": "provider_outage",
    "approval_denied": "policy_denial", "guardrail_blocked": "policy_denial",
    "cli_confirmation_missing": "policy_denial", "cli_confirmation_mismatch": "policy_denial",
    "budget_exhausted": "policy_denial",
    "user_cancelled": "cancellation", "interrupted": "cancellation",
    "verifier_fault": "workspace_failure", "verifier_timeout": "workspace_failure",
    "commit_failed": "workspace_failure", "launch_failed": "workspace_failure", "dirty_tree": "workspace_failure",
    "tree_tampered": "workspace_failure", "secret_in_work": "workspace_failure",
}


def cause_shown(cause: Cause, failure_class: str | None) -> str:
    """The cause as a line beside an AgentRun's state says it: a rate limit as one (its category, the seed's
    `model_capacity`, stays in `--json` and the Attempt's metadata: a quota is no model at capacity)."""
    return "rate limit" if failure_class == "provider_rate_limit" else cause


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
