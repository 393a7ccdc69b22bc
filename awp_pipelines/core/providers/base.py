"""What every provider adapter takes and gives back. No Dagster here.

An adapter runs one agent session for one Attempt on a fixed target. It reports activity as events and
ends with a `ProviderOutcome`; a failure is a `FailureEnvelope` value, not an exception. It never decides
whether the prompt is complete: the verifier does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, model_validator

from awp_pipelines.core.isolation.sandbox import Sandbox
from awp_pipelines.core.packet.model.simulate import SimulateSpec
from awp_pipelines.core.packet.providers_config import AccountBinding
from awp_pipelines.core.records.events import EventSink
from awp_pipelines.core.records.failures import FailureEnvelope
from awp_pipelines.core.records.run_tags import Mode as AttemptMode
from awp_pipelines.core.records.usage import TokenCounts

RESUME_PROMPT = "Continue"


@dataclass(frozen=True, kw_only=True)
class ProviderRequest:
    """Everything an adapter needs for one session; fixed for the Attempt's life."""

    prompt_text: str
    cwd: Path
    timeout_ms: int  # this session's deadline: what is left of the Attempt's (bounds.py); the adapter enforces it
    repos: Mapping[str, Path] = field(default_factory=dict)
    default_repo: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    model: str | None = None
    effort: str | None = None
    attempt_number: int = 1  # 1-based, counted from stored history by the caller
    mode: AttemptMode | str = "run"
    session_id: str | None = None  # the provider session to continue (resume)
    simulate: SimulateSpec | None = None
    account: AccountBinding | None = None  # whose credential and config dir the agent gets
    permission_mode: str | None = None  # default | auto | bypass | plan: mapped onto each CLI's own flag
    allowed_tools: tuple[str, ...] = ()
    max_turns: int | None = None
    system_prompt: str | None = None  # replaces the provider's system prompt (where the provider allows it)
    append_system_prompt: str | None = None  # appended to it
    idle_timeout_ms: int | None = None  # the plan's stream idle bound; None: bounds.stream_idle_ms(timeout_ms)
    home: Path | None = None  # the agent's scoped HOME (environment.scoped_home); None: the operator's
    tools: Path | None = None  # put first on the agent's PATH: the folder of the `awp` shim (environment.awp_shim)
    sandbox: Sandbox | None = None  # the agent runs inside it (isolation/sandbox.py); None: beside the runner
    # A person's steer waits (operator_control.py): the adapter ends the session at its next event, cleanly (not
    # a failure), and the engine resumes it with the steer. None: nothing steers this session.
    steer_waiting: Callable[[], bool] | None = None

    def __post_init__(self) -> None:
        if self.attempt_number < 1:
            raise ValueError(f"attempt_number is 1-based, got {self.attempt_number}")
        if self.timeout_ms <= 0:
            raise ValueError(f"timeout_ms must be positive, got {self.timeout_ms}")
        if self.default_repo is not None and self.default_repo not in self.repos:
            raise ValueError(f"default_repo {self.default_repo!r} is not one of the repos: {', '.join(self.repos)}")

    def repo_root(self, name: str | None = None) -> Path:
        """The named repo; without a name the default repo, or the working directory when there is none."""
        if name is not None:
            if name not in self.repos:
                raise KeyError(name)
            return Path(self.repos[name])
        if self.default_repo is not None:
            return Path(self.repos[self.default_repo])
        return Path(self.cwd)


class ProviderUsage(TokenCounts):
    """The tokens and cost a provider reported for a session."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cost_usd: float = Field(0.0, ge=0, description="Cost the provider reported (0 when it reports none).")
    cost_reported: bool = Field(False, description="The provider reported the cost itself.")


class ProviderOutcome(BaseModel):
    """How a session ended. `ok` means the provider reported no failure, nothing about the contract."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ok: bool = Field(description="The session ended without a provider failure.")
    failure: FailureEnvelope | None = Field(None, description="The failure; set exactly when not ok.")
    session_id: str | None = Field(None, description="Provider session id, for resume.")
    messages: int = Field(0, ge=0, description="Assistant messages received in the Attempt so far.")
    usage: ProviderUsage = Field(default_factory=ProviderUsage,
                                 description="Token and cost telemetry of the Attempt so far.")
    changed_files: list[str] = Field(default_factory=list,
                                     description="Files the provider reports it changed: `repo:path`, or a "
                                                 "bare path relative to cwd when the request names no repo.")
    reported_model: str | None = Field(None, description="The model the provider said it ran (its session's "
                                       "init or response); None when it said none.")

    @model_validator(mode="after")
    def _failure_iff_not_ok(self) -> ProviderOutcome:
        if self.ok == (self.failure is not None):
            raise ValueError("an outcome has a failure exactly when it is not ok")
        return self

    @classmethod
    def from_sink(cls, sink: EventSink, failure: FailureEnvelope | None, session_id: str | None,
                  changed_files: list[str] | None = None, reported_model: str | None = None) -> ProviderOutcome:
        """The outcome with messages, usage and the reported model from the sink's counters (the Attempt's
        totals, resumes included)."""
        c = sink.counters
        return cls(ok=failure is None, failure=failure, session_id=session_id, messages=c.messages,
                   usage=ProviderUsage(**c.tokens, cost_usd=c.cost_usd,
                                       cost_reported=c.cost_reported),
                   changed_files=changed_files or [], reported_model=reported_model or c.reported_model)


@runtime_checkable
class ProviderAdapter(Protocol):
    def run(self, request: ProviderRequest, sink: EventSink) -> ProviderOutcome:
        """Start a fresh session with `request.prompt_text`."""
        ...

    def resume(self, request: ProviderRequest, sink: EventSink) -> ProviderOutcome:
        """Continue `request.session_id` natively with the prompt "Continue"."""
        ...
