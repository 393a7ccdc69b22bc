"""Who enforces `permission_mode` and `allowed_tools`: the provider natively, AWP's sandbox, or nobody.

Claude Code and Gemini take both as flags; Codex takes permission modes (its `--sandbox` levels) but has no
tool allow-list; OpenCode and `command` agents take neither. The sandbox enforces `plan` for those by
mounting the work trees read-only; it cannot enforce a tool list. `bypass` restricts nothing, so nothing
needs enforcing. `awp lint` reports an error where
nobody enforces what the packet asks, and the Attempt's provenance records who did.
"""

from __future__ import annotations

from typing import Literal

Enforcer = Literal["provider", "sandbox", "not enforced", "nothing to enforce"]
NATIVE_PERMISSION_MODES = frozenset({"claude_code", "codex", "gemini", "simulated"})
NATIVE_ALLOWED_TOOLS = frozenset({"claude_code", "gemini", "simulated"})


def sandbox_enforces_plan(kind: str, permission_mode: str | None, sandboxed: bool) -> bool:
    """`plan` on a kind without it: the sandbox mounts the work trees read-only."""
    return sandboxed and permission_mode == "plan" and kind not in NATIVE_PERMISSION_MODES


def permission_enforcer(kind: str, permission_mode: str | None, sandboxed: bool) -> Enforcer | None:
    """None when no mode is asked."""
    if not permission_mode:
        return None
    if kind in NATIVE_PERMISSION_MODES:
        return "provider"
    if permission_mode == "bypass":  # asks for no restriction: a kind without modes runs that way anyway
        return "nothing to enforce"
    return "sandbox" if sandbox_enforces_plan(kind, permission_mode, sandboxed) else "not enforced"


def tools_enforcer(kind: str, allowed_tools: list[str] | tuple[str, ...],
                   permission_mode: str | None = None) -> Enforcer | None:
    """None when no list is asked. Under `bypass` a tool list restricts nothing (Claude Code reads it as the
    tools allowed without asking, and bypass asks for none), so a kind without one has nothing to enforce."""
    if not allowed_tools:
        return None
    if kind in NATIVE_ALLOWED_TOOLS:
        return "provider"
    return "nothing to enforce" if permission_mode == "bypass" else "not enforced"
