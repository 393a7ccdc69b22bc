"""Who and what ran an Attempt, beyond its target: profile, permissions, the model the CLI reported, and
whose credential it used. Part of the immutable Attempt record; names only, never a credential's value."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field

from awp_pipelines.core.engine.confirmation import model_confirms
from awp_pipelines.core.packet.providers_config import AccountBinding
from awp_pipelines.core.providers.enforcement import Enforcer, permission_enforcer, tools_enforcer


class AgentProvenance(BaseModel):
    model_config = ConfigDict(frozen=True)

    profile: str | None = Field(None, description="The home profile the plan read (`profile:` or --profile).")
    permission_mode: str | None = Field(None, description="The permission mode the agent ran with.")
    allowed_tools: list[str] = Field(default_factory=list, description="The tools the agent was allowed.")
    reported_model: str | None = Field(None, description="The model the provider said it ran; None: it said none.")
    model_confirmed: bool | None = Field(None, description="The reported model is the one asked for (None: no "
                                         "report to compare).")
    credential_source: str = Field(description="Whose credential the agent used: the account's variable, or the CLI's "
                            "own login when no account is configured (said so, never left as 'none').")
    cli_key_source: str | None = Field(None, description="Where the CLI said its key came from (Claude Code's "
                                       "apiKeySource), when it says.")
    permission_mode_enforced_by: Enforcer | None = Field(
        None, description="Who enforced permission_mode: provider (natively), sandbox (e.g. `plan` as read-only work "
        "trees) or not enforced; None when none was asked.")
    allowed_tools_enforced_by: Enforcer | None = Field(
        None, description="Who enforced allowed_tools: provider or not enforced; None when none was asked.")


def credential_source(kind: str, account: AccountBinding | None, secret_env: Mapping[str, str]) -> str:
    """The account and its variable; without an account, the CLI's own login (or the operator's variable)."""
    if kind == "simulated":
        return "none: the simulated provider uses no credential"
    if account is None:
        return "no account configured: the CLI's own login (or its variable in the operator's environment)"
    var = account.credential_env
    if var and secret_env.get(var):
        return f"account {account.name}: ${var}"
    where = f" in {account.config_dir}" if account.config_dir else ""
    return f"account {account.name}: ${var or '(none)'} unset, so the CLI's own login{where}"


def provenance(*, profile: str | None, permission_mode: str | None, allowed_tools: list[str], asked: str | None,
               reported: str | None, credential: str, key_source: str | None, kind: str = "",
               sandboxed: bool = False) -> AgentProvenance:
    return AgentProvenance(profile=profile, permission_mode=permission_mode, allowed_tools=list(allowed_tools),
                           permission_mode_enforced_by=permission_enforcer(kind, permission_mode, sandboxed),
                           allowed_tools_enforced_by=tools_enforcer(kind, allowed_tools, permission_mode),
                           reported_model=reported,
                           model_confirmed=model_confirms(asked, reported) if asked and reported else None,
                           credential_source=credential, cli_key_source=key_source)
