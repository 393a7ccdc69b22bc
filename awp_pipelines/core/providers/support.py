"""Which Prompt Runner settings each provider kind honours. `awp lint` reports the rest, with key and line.

A packet written for Prompt Runner runs unchanged, but a setting AWP does not pass to the agent must not
pass in silence: each key below is either honoured by the kinds listed, or reported as unsupported.
"""

from __future__ import annotations

from typing import get_args

from awp_pipelines.core.packet.providers_config import ProviderKind

ALL_KINDS: frozenset[str] = frozenset(get_args(ProviderKind))
_SYSTEM_PROMPT = frozenset({"claude_code", "openai_http", "simulated"})
# key (dotted for nested ones) → the kinds that honour it; `simulated` replays a script, so takes them all
HONOURED_BY: dict[str, frozenset[str]] = {
    "system_prompt": _SYSTEM_PROMPT,  # Claude Code --system-prompt; a system message over HTTP
    "append_system_prompt": _SYSTEM_PROMPT,  # Claude Code --append-system-prompt; a second system message
    "max_turns": frozenset({"claude_code", "simulated"}),  # Claude Code --max-turns
    # the reported model against the one asked for (confirmation.py); a `command` agent reports none
    "cli_confirmation": ALL_KINDS - {"command", "amp"},
    "adapter_opts.timeout": ALL_KINDS,  # the single bound, when `timeout` is unset (plan.py)
}
# Keys no adapter passes on, and why: the transcript and JSONL always keep everything. (`recovery.max_steers` is
# honoured by every kind: a steer resumes the session, operator_control.py.)
NOT_PASSED: dict[str, str] = {
    "sdk_opts": "AWP drives the CLIs, not their SDKs",
    **{key: "AWP passes no per-CLI options" for key in (
        "claude_opts", "codex_opts", "codex_thread_opts", "gemini_opts", "opencode_opts", "amp_opts",
        "cursor_opts", "antigravity_opts")},
    **{key: "the JSONL events keep everything and the transcript has one form" for key in (
        "log_mode", "log_meta", "events_mode", "tool_output", "thinking", "diff")},
}
ADAPTER_OPTS_WHY = "of adapter_opts AWP reads only `timeout`"
_WHY_NOT: dict[tuple[str, str], str] = {
    ("cli_confirmation", "command"): "a command agent reports no model, so `require` always fails",
    ("cli_confirmation", "amp"): "Amp's target names a mode, and the model it reports is the one the mode chose"}


def unsupported(kind: str, key: str) -> str | None:
    """Why provider `kind` ignores the setting `key` (dotted), or None when it honours it or it is no
    Prompt Runner setting this table knows."""
    if kind == "simulated":
        return None
    if key in HONOURED_BY:
        return None if kind in HONOURED_BY[key] else _WHY_NOT.get((key, kind), f"{kind} has no such option")
    if key.startswith("adapter_opts."):
        return ADAPTER_OPTS_WHY
    return NOT_PASSED.get(key)
