"""Agent definitions (`agents:` in providers.yaml): a role, what it is for, where it may run, its template.

A prompt's `agent:` word names one of them, or a built-in role (coder, reviewer, resolver, planner) with no
restriction. A reviewer is independent of the coders it reviews: it never runs on a provider and account a
coder of its upstream prompts used in the same packet run (policy.Chain.excluded, enforced at every pick).
"""

from __future__ import annotations

from typing import get_args

from pydantic import Field

from awp_pipelines.core.packet.model.base import StrictModel
from awp_pipelines.core.packet.model.execution import Role

ROLES: tuple[Role, ...] = get_args(Role)


class AgentSpec(StrictModel):
    role: Role = Field(description="What the agent does: a reviewer is kept off the accounts of the coders it "
                       "reviews.")
    capability: str | None = Field(None, description="What it is for, in words (shown by `awp plan`).")
    providers: list[str] = Field(default_factory=list, description="Providers it may run on (empty: any).")
    models: list[str] = Field(default_factory=list, description="Model-name prefixes it may use (empty: any).")
    template: str | None = Field(None, description="The prompt template its prompts start from (`awp prompt new`).")

    def refuses(self, provider: str, model: str | None) -> str | None:
        """Why a target is not allowed for this agent; None when it is."""
        if self.providers and provider not in self.providers:
            return f"provider '{provider}' is not among its providers ({', '.join(self.providers)})"
        if self.models and not any((model or "").startswith(m) for m in self.models):
            return f"model '{model}' is not among its models ({', '.join(self.models)})"
        return None


def agent_of(word: str, agents: dict[str, AgentSpec]) -> AgentSpec | None:
    """The definition a prompt's `agent:` word names: a catalog entry, else a built-in role; None: unknown."""
    if word in agents:
        return agents[word]
    return AgentSpec.model_validate({"role": word}) if word in ROLES else None
