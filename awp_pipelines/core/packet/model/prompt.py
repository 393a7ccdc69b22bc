"""Prompt front matter: the keys above the `---` line of `prompts/NN_slug.prompt.md`."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from awp_pipelines.core.packet.model.budget import BudgetConfig
from awp_pipelines.core.packet.model.contract import VerifyContract
from awp_pipelines.core.packet.model.execution import ExecutionSettings
from awp_pipelines.core.packet.model.pathtext import PathText
from awp_pipelines.core.packet.model.recovery import RecoveryConfig
from awp_pipelines.core.packet.model.simulate import SimulateSpec

# Accepted for compatibility but never read by the runtime: lint warns (put them in the body instead).
INERT_KEYS: tuple[str, ...] = ("references", "required_reading", "context_files")


class PromptFrontMatter(ExecutionSettings):
    id: str | int | None = Field(None, description="Prompt id; must match the filename's numeric prefix.")
    name: str | None = Field(None, description="Human title; default the slug.")
    phase: int | str | None = Field(None, description="Phase key from the manifest's `phases`.")
    template: PathText | None = Field(None, description="Template the prompt was created from.")
    targets: list[str] | None = Field(None, description="Repo names; the first is the agent's cwd. "
                                      "Default: the default repo.")
    commit: str | None = Field(None, description="Commit message; default the Mission's first line.")
    depends_on: list[str | int] | str | int | None = Field(
        None, description="Prompt ids this one needs; default the previous prompt.")
    verify: VerifyContract | None = Field(None, description="The deterministic completion contract.")
    simulate: SimulateSpec | None = Field(None, description="Scripted attempts for the simulated provider.")
    recovery: RecoveryConfig | None = Field(None, description="Per-prompt recovery, deep-merged over "
                                            "the packet's.")
    budget: BudgetConfig | None = Field(None, description="Spend caps of this prompt's AgentRun, on top of the "
                                        "packet's caps on the whole packet run.")
    references: Any = Field(None, description="Inert (never sent): write required reading in the body.")
    required_reading: Any = Field(None, description="Inert (never sent): write required reading in the body.")
    context_files: Any = Field(None, description="Inert (never sent): write context in the body.")
