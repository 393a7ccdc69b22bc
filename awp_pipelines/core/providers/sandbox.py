"""Root and sandboxes: which permission modes a CLI refuses as root, and the plain settings that lift it.

Claude Code run as root refuses `--permission-mode bypassPermissions` ("cannot be used with root/sudo
privileges", exit 1) unless `IS_SANDBOX=1` is in its environment (reference/agent-clis.md). Root is the
default in containers and CI, so `awp doctor`, `awp run`'s preflight and the adapter itself ask this one
function before any agent starts, and say what to do instead of letting every Attempt fail the same way.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from awp_pipelines.core.packet.providers_config import AccountBinding, ProviderSpec

SANDBOX_VAR = "IS_SANDBOX"
# kind → AWP permission modes its CLI refuses as root (without IS_SANDBOX=1)
ROOT_REFUSED_MODES: dict[str, frozenset[str]] = {"claude_code": frozenset({"bypass"})}


@dataclass(frozen=True)
class RootRefusal:
    """Why the CLI would refuse to start, and what to do about it."""

    detail: str
    fix: str


def configured_env(spec: ProviderSpec, account: AccountBinding | None) -> dict[str, str]:
    """The plain settings for the agent: the provider's `env:`, the account's over them."""
    return {**spec.env, **(account.env if account else {})}


def root_refusal(kind: str, permission_mode: str | None, agent_env: Mapping[str, str], *, provider: str,
                 account: str | None = None, euid: int | None = None) -> RootRefusal | None:
    """The refusal a CLI of `kind` would print for `permission_mode` as this user with `agent_env`, or None."""
    euid = os.geteuid() if euid is None else euid
    if euid != 0 or permission_mode not in ROOT_REFUSED_MODES.get(kind, frozenset()):
        return None
    if agent_env.get(SANDBOX_VAR) == "1":
        return None
    where = f"account {account}" if account else f"provider {provider}"
    return RootRefusal(
        detail=f"running as root, {kind} refuses permission_mode {permission_mode} "
               f"(--dangerously-skip-permissions) unless {SANDBOX_VAR}=1",
        fix=f"inside a container or CI sandbox, set `env: {{{SANDBOX_VAR}: '1'}}` on {where} in "
            f"resources/providers.yaml; else use permission_mode: auto with allowed_tools, or run as a non-root user")


def expected_env(spec: ProviderSpec, account: AccountBinding | None,
                 environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """What the agent's environment will say of the sandbox, before it is built: the operator's own
    IS_SANDBOX (passed through to Claude Code), under the configured settings."""
    environ = os.environ if environ is None else environ
    passed = {SANDBOX_VAR: environ[SANDBOX_VAR]} if SANDBOX_VAR in environ else {}
    return {**passed, **configured_env(spec, account)}
