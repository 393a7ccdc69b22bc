"""Account rotation and cooldowns: which account an Attempt uses, and how long an exhausted one rests.

Pure: no Dagster, no clock (callers pass `now_ms`). The stored side is the ledger's (`Ledger.rest`, `availability`).
Rotation modes: `fill_first` uses the first account until it is exhausted; `between_attempts` moves to
the next account with every Attempt of an AgentRun; `round_robin` takes the account used longest ago
(across every process sharing the store); `least_used` the one with the fewest Attempts. A cooling
account is skipped; when every account cools, the choice is to wait for the first to come back rather
than to fail (LiteLLM #3646).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Literal, get_args

from pydantic import Field

from awp_pipelines.core.packet.model.base import StrictModel
from awp_pipelines.core.packet.model.execution import Rotation
from awp_pipelines.core.records.failures import FALLBACK_WORTHY_CLASSES, FailureEnvelope

ROTATIONS: tuple[str, ...] = get_args(Rotation)
# Capacity is the provider's problem, not the account's: a short rest unless the provider names one.
CAPACITY_COOLDOWN_MS = 60_000
# An auth refusal (not logged in, a bad key) is no limit: no reset comes. The account is passed over briefly, so
# a chain moves on, and picked again once a person logged in (or at once: `awp accounts lift`).
AUTH_RECHECK_MS = 5 * 60_000


class Cooldown(StrictModel):
    """An account resting until `until_ms` (epoch milliseconds); stored as JSON."""

    account: str = Field(description="The resting account.")
    until_ms: int = Field(ge=0, description="Epoch milliseconds when it may be used again.")
    failure_class: str = Field(description="What put it to rest.")
    reason: str = Field("", description="The provider's words, redacted and short.")

    def remaining_ms(self, now_ms: int) -> int:
        return max(0, self.until_ms - now_ms)

    @property
    def state(self) -> Literal["cooling_down", "auth_refused"]:
        """What the account is, in one word: refused its credential (a person logs in), or resting after a limit."""
        return "auth_refused" if self.failure_class == "provider_auth_claim" else "cooling_down"

    def said(self) -> str:
        """The account's rest in words, as what it is: an auth refusal is not a limit."""
        if self.state == "auth_refused":
            return "refused its login (auth); log in, then `awp accounts lift` it"
        return f"is resting after a {self.failure_class.removeprefix('provider_').replace('_', ' ')}"


class AccountUsage(StrictModel):
    """Attempts started on an account and when the last one started; stored as JSON."""

    account: str
    attempts: int = Field(0, ge=0)
    last_used_ms: int = Field(0, ge=0)


@dataclass(frozen=True)
class Availability:
    """What the instance's store says about accounts at one moment (`now_ms`): their cooldowns and usage
    counts. The Dagster layer reads it; the decision takes it as a value."""

    now_ms: int = 0
    cooldowns: Mapping[str, Cooldown] = field(default_factory=dict)
    usage: Mapping[str, AccountUsage] = field(default_factory=dict)

    def resting(self, account: str | None) -> bool:
        cooldown = self.cooldowns.get(account) if account else None
        return cooldown is not None and cooldown.remaining_ms(self.now_ms) > 0

    def after_use(self, account: str | None) -> Availability:
        """As the store will say once `account` has started an Attempt now: for launches decided together."""
        if account is None:
            return self
        old = self.usage.get(account) or AccountUsage(account=account)
        latest = max([self.now_ms, *(u.last_used_ms + 1 for u in self.usage.values())])  # the newest use
        new = AccountUsage(account=account, attempts=old.attempts + 1, last_used_ms=latest)
        return replace(self, usage={**self.usage, account: new})


AccountState = Literal["ready", "cooling_down", "auth_refused"]


class AccountView(StrictModel):
    """One account as `awp accounts` shows it: its state, why, and until when (`awp accounts --json`)."""

    account: str = Field(description="The account's name in providers.yaml.")
    provider: str = Field("", description="Its provider; empty for a name the catalog does not declare.")
    state: AccountState = Field(description="ready; cooling_down (after a rate limit or capacity claim); "
                                "auth_refused (its login was refused: log in, then `awp accounts lift` it).")
    failure_class: str | None = Field(None, description="What put it to rest.")
    reason: str = Field("", description="The provider's words, redacted and short.")
    until: str | None = Field(None, description="When it may be used again (UTC, ISO 8601).")
    remaining_s: int = Field(0, ge=0, description="Seconds until then.")
    attempts: int = Field(0, ge=0, description="Attempts started on it (a rotation hint).")


def account_view(account: str, provider: str, availability: Availability) -> AccountView:
    """What the store says of `account` now: a cooldown that ran out is `ready`."""
    usage = availability.usage.get(account)
    attempts = usage.attempts if usage else 0
    cooldown = availability.cooldowns.get(account)
    if cooldown is None or not availability.resting(account):
        return AccountView(account=account, provider=provider, state="ready", attempts=attempts)
    until = datetime.fromtimestamp(cooldown.until_ms / 1000, UTC).isoformat(timespec="seconds")
    return AccountView(account=account, provider=provider, state=cooldown.state,
                       failure_class=cooldown.failure_class, reason=cooldown.reason, until=until,
                       remaining_s=cooldown.remaining_ms(availability.now_ms) // 1000, attempts=attempts)


@dataclass(frozen=True)
class Choice:
    account: str | None  # None: no account configured, or all cooling (then wait_ms > 0)
    reason: str
    wait_ms: int = 0


def cooldown_for(account: str, failure: FailureEnvelope, default_s: int, now_ms: int) -> Cooldown | None:
    """The rest an account earns from a failure: the provider's reset time, else the account's default."""
    if failure.failure_class not in FALLBACK_WORTHY_CLASSES:
        return None
    if failure.suggested_delay_ms:
        rest = failure.suggested_delay_ms
    elif failure.failure_class == "provider_capacity":
        rest = CAPACITY_COOLDOWN_MS
    elif failure.failure_class == "provider_auth_claim":
        rest = AUTH_RECHECK_MS
    else:
        rest = default_s * 1000
    return Cooldown(account=account, until_ms=now_ms + rest, failure_class=failure.failure_class,
                    reason=failure.message[:200])


def choose_account(accounts: Sequence[str], rotation: Rotation, *, now_ms: int,
                   cooldowns: Mapping[str, Cooldown] | None = None,
                   usage: Mapping[str, AccountUsage] | None = None,
                   attempt_number: int = 1) -> Choice:
    if not accounts:
        return Choice(None, "no account configured")
    cooldowns = cooldowns or {}
    usage = usage or {}
    ready = [a for a in accounts if a not in cooldowns or cooldowns[a].remaining_ms(now_ms) == 0]
    if not ready:
        first = min(accounts, key=lambda a: cooldowns[a].until_ms)
        wait = cooldowns[first].remaining_ms(now_ms)
        return Choice(None, f"every account cools down; {first} is back in {wait // 1000}s", wait_ms=wait)
    resting = [a for a in accounts if a not in ready]
    note = f" ({', '.join(resting)} cooling down)" if resting else ""
    if rotation == "between_attempts":
        # Attempt n of an AgentRun takes the n-th account in order, skipping the resting ones.
        start = (attempt_number - 1) % len(accounts)
        ordered = [*accounts[start:], *accounts[:start]]
        pick = next(a for a in ordered if a in ready)
        return Choice(pick, f"between_attempts: attempt {attempt_number} → {pick}{note}")
    if rotation == "round_robin":
        pick = min(ready, key=lambda a: (usage[a].last_used_ms if a in usage else 0, accounts.index(a)))
        return Choice(pick, f"round_robin: {pick} was used longest ago{note}")
    if rotation == "least_used":
        pick = min(ready, key=lambda a: (usage[a].attempts if a in usage else 0, accounts.index(a)))
        return Choice(pick, f"least_used: {pick} has the fewest attempts{note}")
    return Choice(ready[0], f"fill_first: {ready[0]}{note}")
