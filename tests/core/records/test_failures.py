"""Failure envelopes carry Prompt Runner's recovery flags per class, and never a secret."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from awp_pipelines.core.packet.model.recovery import ClassAttempts
from awp_pipelines.core.packet.model.simulate import SimulatedError
from awp_pipelines.core.records.failures import (
    BUDGETED_CLASSES,
    FAILURE_CLASSES,
    FALLBACK_WORTHY_CLASSES,
    FailureEnvelope,
)
from awp_pipelines.core.records.redact import REDACTED


@pytest.mark.parametrize("cls", ["protocol_error", "transport_disconnect", "transport_timeout"])
def test_transport_failures_are_retryable_and_resumeable(cls: str) -> None:
    env = FailureEnvelope.for_class(cls, "stream dropped")
    assert (env.retryable, env.resumeable, env.repairable, env.remote_claim) == (True, True, True, False)
    assert cls not in FALLBACK_WORTHY_CLASSES


@pytest.mark.parametrize("cls", ["provider_rate_limit", "provider_capacity", "provider_auth_claim",
                                 "provider_config_claim", "provider_runtime_claim"])
def test_remote_claims_are_retryable_in_a_fresh_session_not_resumed(cls: str) -> None:
    env = FailureEnvelope.for_class(cls, "the provider says no")
    assert (env.retryable, env.resumeable, env.remote_claim, env.local_deterministic) == (True, False, True, False)
    assert env.severity == "error" and env.phase == "provider"


@pytest.mark.parametrize("cls", ["user_cancelled", "approval_denied", "guardrail_blocked"])
def test_terminal_failures_are_neither_retried_nor_resumed_nor_repaired(cls: str) -> None:
    env = FailureEnvelope.for_class(cls, "stopped")
    assert (env.retryable, env.resumeable, env.repairable) == (False, False, False)
    assert env.severity == "fatal"


@pytest.mark.parametrize("cls", ["cli_confirmation_missing", "cli_confirmation_mismatch",
                                 "verifier_fault", "commit_failed", "launch_failed", "dirty_tree",
                                 "tree_tampered", "secret_in_work"])
def test_local_deterministic_failures_are_not_retried(cls: str) -> None:
    env = FailureEnvelope.for_class(cls, "same inputs, same failure")
    assert env.local_deterministic and not env.retryable and not env.repairable and not env.remote_claim


def test_local_classes_record_where_they_happened() -> None:
    assert FailureEnvelope.for_class("verifier_timeout", "slow").phase == "verify"
    assert FailureEnvelope.for_class("commit_failed", "hook").phase == "commit"
    assert FailureEnvelope.for_class("launch_failed", "no binary").phase == "launch"
    assert FailureEnvelope.for_class("dirty_tree", "a hand edit").phase == "launch"
    assert FailureEnvelope.for_class("tree_tampered", ".git/commondir").phase == "commit"
    assert FailureEnvelope.for_class("secret_in_work", "a.txt line 1").phase == "commit"
    assert FailureEnvelope.for_class("unknown", "?", phase="launch").phase == "launch"


def test_unknown_failures_get_a_retry_but_no_resume() -> None:
    env = FailureEnvelope.for_class("unknown", "something odd")
    assert (env.retryable, env.resumeable, env.repairable) == (True, False, True)


@pytest.mark.parametrize("cls, worthy", [
    ("provider_rate_limit", True), ("provider_capacity", True), ("provider_auth_claim", True),
    ("provider_config_claim", False), ("provider_runtime_claim", False), ("transport_timeout", False),
    ("guardrail_blocked", False),
])
def test_fallback_is_worth_it_only_where_another_account_or_provider_may_help(cls: str, worthy: bool) -> None:
    assert (FailureEnvelope.for_class(cls, "x").failure_class in FALLBACK_WORTHY_CLASSES) is worthy


def test_capacity_suggests_prompt_runners_two_second_pause_unless_the_provider_says_otherwise() -> None:
    assert FailureEnvelope.for_class("provider_capacity", "busy").suggested_delay_ms == 2000
    assert FailureEnvelope.for_class("provider_capacity", "busy", suggested_delay_ms=9000).suggested_delay_ms == 9000
    assert FailureEnvelope.for_class("provider_rate_limit", "slow down").suggested_delay_ms is None


def test_messages_are_redacted_by_pattern_and_by_given_secret_values() -> None:
    key = "sk-" + "x" * 30
    env = FailureEnvelope.for_class("provider_auth_claim", f"bad key {key} for acct hunter2hunter2",
                                    provider_code="authentication_failed", secrets=["hunter2hunter2"])
    assert key not in env.message and "hunter2" not in env.message
    assert env.message == f"bad key {REDACTED} for acct {REDACTED}"
    assert env.provider_code == "authentication_failed"


def test_direct_construction_also_redacts_and_caps_the_message() -> None:
    key = "ghp_" + "b" * 36
    env = FailureEnvelope(failure_class="unknown", retryable=True, resumeable=False, repairable=True,
                          local_deterministic=False, remote_claim=False, message=key + " " + "y" * 10_000)
    assert key not in env.message and len(env.message) < 4100


def test_envelopes_are_frozen_and_strict() -> None:
    env = FailureEnvelope.for_class("transport_timeout", "t")
    with pytest.raises(ValidationError):
        env.retryable = False  # type: ignore[misc]
    with pytest.raises(ValidationError):
        FailureEnvelope.model_validate({**env.model_dump(), "surprise": 1})
    with pytest.raises(ValueError):
        FailureEnvelope.for_class("made_up", "x")  # type: ignore[arg-type]


def test_envelope_round_trips_through_json() -> None:
    env = FailureEnvelope.for_class("provider_rate_limit", "429", provider_code="rate_limit",
                                    suggested_delay_ms=1500, suggested_max_attempts=5)
    assert FailureEnvelope.model_validate_json(env.model_dump_json()) == env


def test_every_class_with_a_retry_budget_or_a_simulated_kind_is_a_failure_class() -> None:
    assert len(FAILURE_CLASSES) == len(set(FAILURE_CLASSES)) == 23
    # Prompt Runner's class_attempts keys, in its order: one budget field per budgeted class.
    assert tuple(ClassAttempts.model_fields) == BUDGETED_CLASSES
    assert set(BUDGETED_CLASSES) <= set(FAILURE_CLASSES)
    simulated = set(SimulatedError.model_json_schema()["properties"]["kind"]["enum"])
    assert len(simulated) == 11 and simulated <= set(FAILURE_CLASSES)
    assert not simulated & {"verifier_fault", "verifier_timeout", "commit_failed", "launch_failed", "dirty_tree",
                            "unknown"}
