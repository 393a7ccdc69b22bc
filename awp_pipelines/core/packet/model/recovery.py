"""Recovery budgets, with Prompt Runner 0.12.1's keys and defaults, deep-merged packet → prompt."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from awp_pipelines.core.packet.model.base import StrictModel


class ClassAttempts(StrictModel):
    """Attempts allowed per failure class, counted across runs from stored history. One field per
    `failures.BUDGETED_CLASSES`, in its order (a test holds them together)."""

    provider_capacity: int = Field(5, ge=0, description="Attempts after 'model at capacity' claims.")
    provider_rate_limit: int = Field(5, ge=0, description="Attempts after rate-limit claims.")
    provider_auth_claim: int = Field(3, ge=0, description="Attempts after remote auth claims.")
    provider_config_claim: int = Field(3, ge=0, description="Attempts after config/model-unavailable claims.")
    provider_runtime_claim: int = Field(3, ge=0, description="Attempts after remote runtime failures.")
    transport_disconnect: int = Field(4, ge=0, description="Attempts after a dropped connection.")
    transport_timeout: int = Field(4, ge=0, description="Attempts after a transport timeout.")
    protocol_error: int = Field(4, ge=0, description="Attempts after a protocol error.")
    unknown: int = Field(3, ge=0, description="Attempts after an unclassified failure.")


class RetryConfig(StrictModel):
    max_attempts: int = Field(3, ge=1, description="Default attempt budget for a retryable failure.")
    base_delay_ms: int = Field(1000, ge=0, description="First backoff delay; doubles per attempt.")
    max_delay_ms: int = Field(30000, ge=0, description="Upper bound of the backoff delay.")
    jitter: bool = Field(True, description="Draw the delay uniformly from [d/2, d].")
    class_attempts: ClassAttempts = Field(default_factory=ClassAttempts,
                                          description="Attempt budgets per failure class.")


class RepairConfig(StrictModel):
    enabled: bool = Field(True, description="Start repair attempts for unmet verifier items.")
    max_attempts: int = Field(2, ge=0, description="Repair attempts allowed per prompt.")
    trigger_on_nominal_success_with_failed_verifier: bool = Field(
        True, description="Repair when the provider succeeded but the contract failed.")
    trigger_on_provider_failure_with_workspace_changes: bool = Field(
        True, description="Repair when a non-retryable provider failure left workspace changes.")
    trigger_on_retry_exhaustion_with_workspace_changes: bool = Field(
        True, description="Repair when retries ran out but the workspace changed.")


class RecoveryConfig(StrictModel):
    """`recovery:` in the manifest or a prompt's front matter."""

    resume_attempts: int = Field(2, ge=0, description="Provider-session resumes after a transport failure.")
    max_steers: int = Field(3, ge=0, description="Operator steering messages allowed per prompt.")
    retry: RetryConfig = Field(default_factory=RetryConfig, description="Retry budgets and backoff.")
    repair: RepairConfig = Field(default_factory=RepairConfig, description="Repair budget and triggers.")


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Nested dicts merge key by key; anything else in `override` replaces the base value."""
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged
