"""Failures are values: the `FailureEnvelope` travels from a provider adapter to the decision function.

Classes and flags follow Prompt Runner 0.12.1's `FailureEnvelope` (reference/prompt-runner.md, Recovery);
AWP adds local classes for what happens around the provider: verifier faults and timeouts, commit failures,
agents that never started, Attempts interrupted, and work trees a person left changes in.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator

from awp_pipelines.core.records.redact import redact

# The one definition of the failure classes, in groups; every subset elsewhere is derived from these.
# Within a group, Prompt Runner's order (its `class_attempts` keys).
# transport: the connection broke; the provider session can be resumed
TransportClass = Literal["transport_disconnect", "transport_timeout", "protocol_error"]
# remote claims: the provider says so; retry (maybe elsewhere), a fresh session
RemoteClaimClass = Literal["provider_capacity", "provider_rate_limit", "provider_auth_claim",
                           "provider_config_claim", "provider_runtime_claim"]
# terminal: a person or a policy said no
TerminalClass = Literal["user_cancelled", "approval_denied", "guardrail_blocked"]
# local deterministic: the CLI did not confirm the requested provider/model
CliConfirmationClass = Literal["cli_confirmation_missing", "cli_confirmation_mismatch"]
# AWP's local classes: what happens around the provider
AwpLocalClass = Literal["verifier_fault", "verifier_timeout", "commit_failed", "launch_failed",
                        "interrupted",  # interrupted: its process died, or a signal stopped it, mid-Attempt
                        "dirty_tree",  # dirty_tree: a person's changes were in the work tree (cleantree.py)
                        "budget_exhausted",  # the running spend reached the packet run's or the prompt's cap
                        # the agent's session changed the tree's git metadata (records/git_tamper.py)
                        "tree_tampered",
                        "secret_in_work"]  # the work holds a secret AWP knows: never committed (secret_scan.py)

FailureClass = Literal[TransportClass, RemoteClaimClass, TerminalClass, CliConfirmationClass, "unknown",
                       AwpLocalClass]
FAILURE_CLASSES: tuple[FailureClass, ...] = get_args(FailureClass)
# The classes with a retry budget of their own (`recovery.retry.class_attempts`), in Prompt Runner's order.
BudgetedClass = Literal[RemoteClaimClass, TransportClass, "unknown"]
BUDGETED_CLASSES: tuple[BudgetedClass, ...] = get_args(BudgetedClass)
# The error kinds a `simulate:` step may report: what a provider can say, never an AWP-local class.
SimulatedErrorKind = Literal[RemoteClaimClass, TransportClass, TerminalClass]

Phase = Literal["launch", "provider", "verify", "commit"]
Severity = Literal["error", "fatal"]

TRANSPORT_CLASSES: frozenset[str] = frozenset(get_args(TransportClass))
# A guardrail block is the provider's claim too, though terminal: no retry fixes it.
REMOTE_CLAIM_CLASSES: frozenset[str] = frozenset(get_args(RemoteClaimClass)) | {"guardrail_blocked"}
CLI_CONFIRMATION_CLASSES: frozenset[str] = frozenset(get_args(CliConfirmationClass))
LOCAL_DETERMINISTIC_CLASSES: frozenset[str] = (CLI_CONFIRMATION_CLASSES
                                               | frozenset(get_args(AwpLocalClass)) - {"verifier_timeout"})
# Another provider or account may succeed where this one is limited, overloaded or refused the credential.
FALLBACK_WORTHY_CLASSES: frozenset[str] = frozenset({"provider_rate_limit", "provider_capacity",
                                                     "provider_auth_claim"})
# Auth and config claims that repeat identically (not logged in, an unknown model: classify.repeat_fix) are
# deterministic: never retried, but another target of the chain may serve.
REFUSAL_CLASSES: frozenset[str] = frozenset({"provider_auth_claim", "provider_config_claim"})

_PHASES: dict[str, Phase] = {
    "verifier_fault": "verify",
    "verifier_timeout": "verify",
    "commit_failed": "commit",
    "launch_failed": "launch",
    "dirty_tree": "launch",
    "tree_tampered": "commit",
    "secret_in_work": "commit",
    "cli_confirmation_missing": "launch",
    "cli_confirmation_mismatch": "launch",
}
# Prompt Runner suggests a short pause before retrying a model at capacity.
_DEFAULT_DELAY_MS: dict[str, int] = {"provider_capacity": 2000}
MAX_MESSAGE_CHARS = 4000


class FailureEnvelope(BaseModel):
    """One failure, classified: what happened, and what may be tried next."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    failure_class: FailureClass = Field(description="Prompt Runner's failure class, or one of AWP's local ones.")
    retryable: bool = Field(description="Running the prompt again (same or another target) may succeed.")
    resumeable: bool = Field(description="The provider session can be continued with 'Continue'.")
    repairable: bool = Field(description="A repair attempt may fix what this failure left behind.")
    local_deterministic: bool = Field(description="Local and deterministic: the same inputs fail the same way.")
    remote_claim: bool = Field(description="The provider claims it; AWP cannot check it.")
    severity: Severity = Field("error", description="`fatal` for classes that no retry can fix.")
    phase: Phase = Field("provider", description="Where it happened: launch, provider, verify or commit.")
    provider_code: str | None = Field(None, description="The provider's own error code, if it gave one.")
    suggested_delay_ms: int | None = Field(None, ge=0, description="Pause before retrying (e.g. rate-limit reset).")
    suggested_max_attempts: int | None = Field(None, ge=0, description="The provider's hint for a retry budget.")
    message: str = Field("", description="Human-readable, redacted and capped.")

    @field_validator("message", "provider_code")
    @classmethod
    def _redacted(cls, value: str | None) -> str | None:
        if value is None:
            return None
        value = redact(value)
        if len(value) > MAX_MESSAGE_CHARS:
            value = value[:MAX_MESSAGE_CHARS] + " [...]"
        return value

    @classmethod
    def for_class(
        cls,
        failure_class: FailureClass,
        message: str,
        provider_code: str | None = None,
        suggested_delay_ms: int | None = None,
        *,
        phase: Phase | None = None,
        suggested_max_attempts: int | None = None,
        secrets: Iterable[str] = (),
        deterministic: bool = False,
    ) -> FailureEnvelope:
        """The envelope for `failure_class` with Prompt Runner's flags; `secrets` are redacted from `message`.
        `deterministic`: the CLI refused its own configuration before any request (e.g. a permission mode it
        refuses as root): the same inputs fail the same way, so nothing retries, resumes or repairs it."""
        if failure_class not in FAILURE_CLASSES:
            raise ValueError(f"unknown failure class {failure_class!r}")
        transport = failure_class in TRANSPORT_CLASSES and not deterministic
        remote = failure_class in REMOTE_CLAIM_CLASSES and not deterministic
        retryable = not deterministic and (transport or (remote and failure_class != "guardrail_blocked")
                                           or failure_class in ("unknown", "interrupted"))
        return cls(
            failure_class=failure_class,
            retryable=retryable,
            resumeable=transport,
            repairable=retryable,
            local_deterministic=deterministic or failure_class in LOCAL_DETERMINISTIC_CLASSES,
            remote_claim=remote,
            severity="error" if retryable else "fatal",
            phase=phase or ("launch" if deterministic else _PHASES.get(failure_class, "provider")),
            provider_code=provider_code,
            suggested_delay_ms=(suggested_delay_ms if suggested_delay_ms is not None
                                else _DEFAULT_DELAY_MS.get(failure_class)),
            suggested_max_attempts=suggested_max_attempts,
            message=redact(message, secrets),
        )
