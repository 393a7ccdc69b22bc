"""Agent definitions (`agents:` in providers.yaml): a role, what it is for, where it may run, how (permission
mode, allowed tools, isolation), its template.

A prompt's `agent:` word names one of them, or a built-in role (coder, reviewer, resolver, planner) with no
restriction. What a definition says is enforced, not linted: its providers and models filter the prompt's
chain at every choice of target (first, rotation, fallback, past a failed probe, a repair or a launch by
hand: policy.Chain), a chain with no target left for it is a policy denial, and its permission mode, tools and
isolation are the Attempt's (plan.py). A reviewer is also independent of the coders it reviews: it never runs
on a provider and account a coder of its upstream prompts used in the same packet run (policy.Chain.excluded).
"""

from __future__ import annotations

from typing import get_args

from pydantic import Field

from awp_pipelines.core.isolation.profile import Isolation
from awp_pipelines.core.packet.model.base import StrictModel
from awp_pipelines.core.packet.model.execution import PermissionMode, Role

ROLES: tuple[Role, ...] = get_args(Role)


class AgentSpec(StrictModel):
    role: Role = Field(description="What the agent does: a reviewer is kept off the accounts of the coders it "
                       "reviews.")
    capability: str | None = Field(None, description="What it is for, in words (shown by `awp plan`).")
    providers: list[str] = Field(default_factory=list, description="Providers it may run on (empty: any).")
    models: list[str] = Field(default_factory=list, description="Model-name prefixes it may use (empty: any).")
    template: str | None = Field(None, description="The prompt template its prompts start from (`awp prompt new`).")
    permission_mode: PermissionMode | None = Field(
        None, description="The permission mode its Attempts run with, whatever the packet or prompt says (e.g. "
        "`plan` for a read-only reviewer). Unset: the layers' own.")
    allowed_tools: list[str] | None = Field(
        None, description="The only tools it may use: a prompt's own `allowed_tools` are narrowed to these. Unset: "
        "the layers' own.")
    isolation: Isolation | None = Field(
        None, description="`sandbox`: its Attempts always run sandboxed, whatever the packet says; `none` weakens "
        "nothing a packet asked for (the stricter word wins). Unset: the layers' own.")

    def refuses(self, provider: str, model: str | None) -> str | None:
        """Why a target is not allowed for this agent; None when it is."""
        return target_refusal(tuple(self.providers), tuple(self.models), provider, model)


def target_refusal(providers: tuple[str, ...], models: tuple[str, ...], provider: str, model: str | None) -> str | None:
    """Why an agent allowed `providers` and `models` (prefixes; empty: any) may not run on a target; None: it may."""
    if providers and provider not in providers:
        return f"provider '{provider}' is not among its providers ({', '.join(providers)})"
    if models and not any((model or "").startswith(m) for m in models):
        return f"model '{model}' is not among its models ({', '.join(models)})"
    return None


def agent_of(word: str, agents: dict[str, AgentSpec]) -> AgentSpec | None:
    """The definition a prompt's `agent:` word names: a catalog entry, else a built-in role; None: unknown."""
    if word in agents:
        return agents[word]
    return AgentSpec.model_validate({"role": word}) if word in ROLES else None
