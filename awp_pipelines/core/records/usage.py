"""Token counts, defined once: what a provider reports (`providers.base.ProviderUsage`) and what an Attempt
records (`attempts.Usage`) both extend `TokenCounts`, and the event counters count `TOKEN_FIELDS`.

Cost stays with each: a provider's report says `cost_usd` (0.0 when it gave none) and `cost_reported`; an
Attempt's `Usage.cost_usd` is None when no one knows the cost (see `attempts.attempt_usage`).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class TokenCounts(BaseModel):
    model_config = ConfigDict(frozen=True)

    input_tokens: int = Field(0, ge=0, description="Input tokens, cache reads excluded.")
    output_tokens: int = Field(0, ge=0, description="Output tokens, reasoning included.")
    cached_input_tokens: int = Field(0, ge=0, description="Input tokens read from the provider's cache.")
    reasoning_tokens: int = Field(0, ge=0, description="Of the output tokens, those spent reasoning.")

    def token_counts(self) -> TokenCounts:
        """The counts alone, to build another record from: `Usage(**usage.token_counts().model_dump())`."""
        return TokenCounts(input_tokens=self.input_tokens, output_tokens=self.output_tokens,
                           cached_input_tokens=self.cached_input_tokens, reasoning_tokens=self.reasoning_tokens)


TOKEN_FIELDS: tuple[str, ...] = tuple(TokenCounts.model_fields)
