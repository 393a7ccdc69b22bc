"""`budget:` — spend caps of a packet run (manifest) or of one prompt's AgentRun (front matter)."""

from __future__ import annotations

from pydantic import Field

from awp_pipelines.core.packet.model.base import StrictModel


class BudgetConfig(StrictModel):
    """Caps on recorded spend. No further Attempt starts once the spend has reached a cap."""

    max_cost_usd: float | None = Field(None, gt=0, description="Cap on the cost the providers reported, in "
                                       "US dollars: the whole packet run (manifest) or the prompt's AgentRun "
                                       "(front matter).")
    max_tokens: int | None = Field(None, ge=1, description="Cap on tokens (input + output) the providers "
                                   "reported, over the same scope.")

    def describe(self) -> str:
        parts = ([f"${self.max_cost_usd:g}"] if self.max_cost_usd is not None else []) + \
                ([f"{self.max_tokens} tokens"] if self.max_tokens is not None else [])
        return ", ".join(parts) or "none"
