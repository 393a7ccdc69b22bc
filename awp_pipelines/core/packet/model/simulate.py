"""Prompt Runner's `simulate:` blocks: scripted attempts for the built-in simulated provider."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from awp_pipelines.core.packet.model.base import StrictModel
from awp_pipelines.core.packet.model.pathtext import PathText
from awp_pipelines.core.records.failures import SimulatedErrorKind


class SimulatedWrite(StrictModel):
    path: PathText = Field(description="File to write, relative to the repo (default: the prompt's first target).")
    text: str = Field("", description="Content written.")
    append: bool = Field(False, description="Append instead of replacing.")
    repo: str | None = Field(None, description="Repo name; default the prompt's first target.")


class SimulatedTool(StrictModel):
    """AWP: a tool call the simulated agent makes (started, then completed with `output`), before its writes."""

    name: str = Field(min_length=1, description="The tool's name, e.g. Bash or Read.")
    input: dict[str, str] = Field(default_factory=dict, description="Its input, e.g. {command: git log}.")
    output: str = Field("", description="What the tool answers.")


class SimulatedError(StrictModel):
    kind: SimulatedErrorKind = Field(description="Failure class the simulated provider reports.")
    message: str = Field("", description="Provider message.")


class SimulatedControl(StrictModel):
    """AWP: the agent-control request a simulated agent makes at the end of its step."""

    action: Literal["continue", "repeat", "finish", "blocked"] = Field(description="The request's action.")
    reason: str = Field("", description="Why (required for finish and blocked).")
    progress: str | None = Field(None, description="A progress summary recorded before the request.")
    forge: Literal["token", "iteration", "prompt"] | None = Field(
        None, description="Make the request wrong on purpose: another token, iteration or prompt (tests).")


class SimulatedStep(StrictModel):
    messages: list[str] = Field(default_factory=list, description="Assistant messages emitted.")
    tools: list[SimulatedTool] = Field(default_factory=list, description="AWP: tool calls made after the messages "
                                       "(each write is a Write or Edit tool call of its own).")
    writes: list[SimulatedWrite] = Field(default_factory=list, description="File side effects, in order.")
    error: SimulatedError | None = Field(None, description="Ends the step with this provider failure.")
    delay_ms: int = Field(0, ge=0, le=3_600_000, description="AWP: a slow agent. Pause after the messages, "
                          "before the writes (demos, watch and concurrency tests).")
    control: SimulatedControl | None = Field(None, description="AWP: an agent-control request made after the "
                                             "writes (only in an agent-controlled session).")
    cost_usd: float | None = Field(None, ge=0, description="AWP: the cost this step reports through the usage "
                                   "telemetry, in US dollars (spend-cap tests and demos). Default: none.")


class SimulateSpec(StrictModel):
    """attempts[0] drives the first attempt; later entries drive retry, fallback or repair attempts."""

    attempts: list[SimulatedStep] = Field(default_factory=list, description="One step per attempt.")
    resume: SimulatedStep | None = Field(None, description="Drives a session resume after a transport failure.")
