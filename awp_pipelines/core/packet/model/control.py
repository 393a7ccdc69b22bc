"""`agent_control:` — authenticated per-iteration directives (continue, repeat, finish, blocked)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from awp_pipelines.core.packet.model.base import StrictModel
from awp_pipelines.core.packet.model.contract import VerifyContract


class AgentControlConfig(StrictModel):
    enabled: bool = Field(False, description="Let the agent steer movement through a linear packet.")
    default_action: Literal["continue", "repeat"] = Field(
        "continue", description="What happens when the agent writes no directive.")
    max_iterations: int = Field(20, ge=1, description="Iterations allowed per prompt.")
    completion_verify: VerifyContract | None = Field(
        None, description="Packet-level contract that must pass before 'finish' is accepted.")

    @model_validator(mode="after")
    def _completion_verify_required(self) -> AgentControlConfig:
        if self.enabled and self.completion_verify is None:
            raise ValueError("completion_verify is required when agent_control is enabled")
        return self
