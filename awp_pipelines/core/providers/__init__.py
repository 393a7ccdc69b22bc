"""Provider adapters: one agent session per Attempt, failures as values, activity as events."""

from awp_pipelines.core.providers.base import (
    RESUME_PROMPT,
    AttemptMode,
    ProviderAdapter,
    ProviderOutcome,
    ProviderRequest,
    ProviderUsage,
)
from awp_pipelines.core.providers.simulated import SimulatedProvider, WriteRefused

__all__ = [
    "RESUME_PROMPT",
    "AttemptMode",
    "ProviderAdapter",
    "ProviderOutcome",
    "ProviderRequest",
    "ProviderUsage",
    "SimulatedProvider",
    "WriteRefused",
]
