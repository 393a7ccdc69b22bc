"""Execution keys shared by the home profile, the manifest and prompt front matter (later layers win)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from awp_pipelines.core.isolation.network_policy import NETWORK_HELP
from awp_pipelines.core.isolation.network_setting import NetworkSetting
from awp_pipelines.core.isolation.profile import ISOLATION_HELP, Isolation
from awp_pipelines.core.packet.bounds import parse_timeout_ms
from awp_pipelines.core.packet.model.base import StrictModel

Role = Literal["coder", "reviewer", "resolver", "planner"]
Effort = Literal["minimal", "low", "medium", "high", "xhigh", "max"]
PermissionMode = Literal["default", "auto", "bypass", "plan"]
# How a target's accounts are picked (rotation.py says how each works).
Rotation = Literal["fill_first", "between_attempts", "round_robin", "least_used", "none", "on_exhaustion"]


class TargetSpec(StrictModel):
    """One place an Attempt can run: provider, model, effort and the accounts it may use."""

    provider: str = Field(description="Provider name from resources/providers.yaml.")
    model: str | None = Field(None, description="Model id or alias; default the provider's default model.")
    effort: Effort | None = Field(None, description="Reasoning effort.")
    accounts: list[str] | None = Field(None, description="Accounts to use, in order of preference.")
    probe: bool = Field(False, description="Check availability just before this target is chosen.")
    rotation: Rotation | None = Field(None, description="How this target's accounts are picked; unset: its "
                                      "alias's rotation, else the one of the chain it falls back from.")


class ExecutionSettings(StrictModel):
    provider: str | None = Field(None, description="Provider name (claude, codex, opencode, gemini, simulated, …); "
                                 "inferred from the model when unset.")
    model: str | None = Field(None, description="Model id, or an alias from resources/providers.yaml.")
    reasoning_effort: Effort | None = Field(None, description="Reasoning effort passed to the provider.")
    permission_mode: PermissionMode | None = Field(None, description="Agent permission mode.")
    allowed_tools: list[str] | None = Field(None, description="Tools the agent may use.")
    isolation: Isolation | None = Field(None, description=ISOLATION_HELP + " The packet's word wins over the "
                                        "provider's and the account's.")
    network: NetworkSetting | None = Field(None, description=NETWORK_HELP + " The packet's word wins over the "
                                    "provider's and the account's.")
    timeout: int | str | None = Field(
        None, description="The single bound for an Attempt: milliseconds, a duration ('45m', '2h', '1d'), "
        "or 'unbounded'. Unset means seven days.")
    log_mode: str | None = Field(None, description="Transcript detail (compact|verbose).")
    log_meta: str | bool | None = Field(None, description="Include metadata lines in the transcript.")
    events_mode: str | None = Field(None, description="Which events are written to the JSONL log.")
    tool_output: str | bool | None = Field(None, description="How much tool output the transcript keeps.")
    thinking: str | bool | None = Field(None, description="Show thinking events in the transcript.")
    diff: str | bool | None = Field(None, description="Show diffs in the transcript.")
    system_prompt: str | None = Field(None, description="Replaces the provider's system prompt.")
    append_system_prompt: str | None = Field(None, description="Appended to the provider's system prompt.")
    max_turns: int | None = Field(None, ge=1, description="Turn limit passed to the provider.")
    cli_confirmation: Literal["off", "warn", "require"] | None = Field(
        None, description="Whether the provider CLI must confirm the requested model and settings.")
    adapter_opts: dict[str, Any] | None = Field(None, description="Options for the provider adapter.")
    sdk_opts: dict[str, Any] | None = Field(None, description="Provider SDK options.")
    claude_opts: dict[str, Any] | None = Field(None, description="Claude Code options.")
    codex_opts: dict[str, Any] | None = Field(None, description="Codex options.")
    codex_thread_opts: dict[str, Any] | None = Field(None, description="Codex thread options.")
    gemini_opts: dict[str, Any] | None = Field(None, description="Gemini CLI options.")
    opencode_opts: dict[str, Any] | None = Field(None, description="OpenCode options.")
    amp_opts: dict[str, Any] | None = Field(None, description="Amp options.")
    cursor_opts: dict[str, Any] | None = Field(None, description="Cursor agent options.")
    antigravity_opts: dict[str, Any] | None = Field(None, description="Antigravity options.")
    # AWP additions
    agent: str | None = Field(None, description="The agent: a built-in role (coder, reviewer, resolver, planner) "
                              "or the name of an agent defined under `agents:` in providers.yaml.")
    fallback: list[str | TargetSpec] | None = Field(
        None, description="Ordered fallback chain: alias names or explicit targets, tried after the primary.")
    accounts: list[str] | None = Field(None, description="Accounts for the primary provider, in order.")

    @field_validator("timeout")
    @classmethod
    def _timeout_is_a_duration(cls, value: int | str | None) -> int | str | None:
        parse_timeout_ms(value)  # a bad `timeout` is an error where it is written, not when a run starts
        return value


EXECUTION_KEYS: tuple[str, ...] = tuple(ExecutionSettings.model_fields)
