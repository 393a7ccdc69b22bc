"""Rotation modes and cooldowns, pure: which account an Attempt gets."""

from __future__ import annotations

from awp_pipelines.core.decisions.rotation import (
    AUTH_RECHECK_MS,
    AccountUsage,
    Cooldown,
    choose_account,
    cooldown_for,
)
from awp_pipelines.core.records.failures import FailureEnvelope

ACCOUNTS = ["a", "b", "c"]
NOW = 1_000_000


def _cool(account: str, until: int) -> Cooldown:
    return Cooldown(account=account, until_ms=until, failure_class="provider_rate_limit")


def test_fill_first_stays_on_the_first_account_until_it_cools() -> None:
    assert choose_account(ACCOUNTS, "fill_first", now_ms=NOW).account == "a"
    choice = choose_account(ACCOUNTS, "fill_first", now_ms=NOW, cooldowns={"a": _cool("a", NOW + 5)})
    assert choice.account == "b" and "a cooling down" in choice.reason
    # An expired cooldown no longer counts.
    assert choose_account(ACCOUNTS, "fill_first", now_ms=NOW, cooldowns={"a": _cool("a", NOW)}).account == "a"


def test_between_attempts_moves_on_with_every_attempt_and_skips_resting_accounts() -> None:
    assert [choose_account(ACCOUNTS, "between_attempts", now_ms=NOW, attempt_number=n).account
            for n in (1, 2, 3, 4)] == ["a", "b", "c", "a"]
    resting = {"b": _cool("b", NOW + 1)}
    assert choose_account(ACCOUNTS, "between_attempts", now_ms=NOW, attempt_number=2,
                          cooldowns=resting).account == "c"


def test_round_robin_takes_the_account_used_longest_ago() -> None:
    usage = {"a": AccountUsage(account="a", attempts=1, last_used_ms=30),
             "b": AccountUsage(account="b", attempts=9, last_used_ms=10),
             "c": AccountUsage(account="c", attempts=1, last_used_ms=20)}
    assert choose_account(ACCOUNTS, "round_robin", now_ms=NOW, usage=usage).account == "b"


def test_least_used_takes_the_account_with_fewest_attempts() -> None:
    usage = {"a": AccountUsage(account="a", attempts=3), "b": AccountUsage(account="b", attempts=1)}
    assert choose_account(ACCOUNTS, "least_used", now_ms=NOW, usage=usage).account == "c"
    usage["c"] = AccountUsage(account="c", attempts=2)
    assert choose_account(ACCOUNTS, "least_used", now_ms=NOW, usage=usage).account == "b"


def test_when_every_account_cools_the_choice_is_to_wait_for_the_first_back() -> None:
    cooling = {"a": _cool("a", NOW + 9000), "b": _cool("b", NOW + 4000), "c": _cool("c", NOW + 7000)}
    choice = choose_account(ACCOUNTS, "fill_first", now_ms=NOW, cooldowns=cooling)
    assert choice.account is None and choice.wait_ms == 4000 and "b is back" in choice.reason


def test_a_reset_time_becomes_the_cooldown_else_the_accounts_default() -> None:
    limited = FailureEnvelope.for_class("provider_rate_limit", "limit", suggested_delay_ms=120_000)
    assert cooldown_for("a", limited, 3600, NOW).until_ms == NOW + 120_000  # type: ignore[union-attr]
    unstated = FailureEnvelope.for_class("provider_rate_limit", "limit")
    assert cooldown_for("a", unstated, 3600, NOW).until_ms == NOW + 3_600_000  # type: ignore[union-attr]
    # Not logged in is no limit: the account is passed over for minutes, not parked for the hour, and says so.
    refused = cooldown_for("a", FailureEnvelope.for_class("provider_auth_claim", "Not logged in"), 3600, NOW)
    assert refused is not None and refused.until_ms == NOW + AUTH_RECHECK_MS and refused.state == "auth_refused"
    assert cooldown_for("a", FailureEnvelope.for_class("transport_timeout", "idle"), 3600, NOW) is None
