"""Cooldowns and usage counts of accounts, kept in the Dagster instance's storage.

Stored as JSON values in the instance's key-value table (storage.py), which SQLite and Postgres instances
both have: a restart remembers them, and every process on the instance (webserver, daemon, `awp run`) sees
the same ones. Usage counts are a rotation hint, not a
budget: two processes counting at the same instant may lose one increment.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import TypeVar

from dagster import DagsterInstance
from pydantic import BaseModel, ValidationError

from awp_pipelines.core.decisions.rotation import (
    AccountUsage,
    Availability,
    Cooldown,
    cooldown_for,
)
from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.core.records.failures import FailureEnvelope
from awp_pipelines.dagster_compat.kvs import kv_get, kv_set

_COOLDOWN = tags.COOLDOWN_KEY
_USAGE = tags.USAGE_KEY


def now_ms() -> int:
    return int(time.time() * 1000)


M = TypeVar("M", bound=BaseModel)


class AccountStore:
    def __init__(self, instance: DagsterInstance) -> None:
        self._instance = instance

    def cooldowns(self, accounts: Iterable[str]) -> dict[str, Cooldown]:
        return {c.account: c for c in self._read(_COOLDOWN, accounts, Cooldown)}

    def usage(self, accounts: Iterable[str]) -> dict[str, AccountUsage]:
        return {u.account: u for u in self._read(_USAGE, accounts, AccountUsage)}

    def availability(self, accounts: Iterable[str], at_ms: int | None = None) -> Availability:
        """What the rotation decides from: the accounts' cooldowns and usage, as of `at_ms` (default now)."""
        wanted = sorted(accounts)
        at = now_ms() if at_ms is None else at_ms
        return Availability(at, self.cooldowns(wanted), self.usage(wanted)) if wanted else Availability(at)

    def set_cooldown(self, cooldown: Cooldown) -> None:
        kv_set(self._instance, {_COOLDOWN + cooldown.account: cooldown.model_dump_json()})

    def lift(self, account: str) -> Cooldown | None:
        """End the account's cooldown now (`awp accounts lift`): a person fixed its login, or knows the limit
        reset. Returns the cooldown lifted; None when it had none. The entry is cleared, as a read skips."""
        lifted = self.cooldowns([account]).get(account)
        if lifted is not None:
            kv_set(self._instance, {_COOLDOWN + account: "{}"})
        return lifted

    def record_failure(self, account: str, failure: FailureEnvelope, default_s: int,
                       at_ms: int | None = None) -> Cooldown | None:
        """Rest the account if the failure says it is exhausted; returns the cooldown stored."""
        cooldown = cooldown_for(account, failure, default_s, now_ms() if at_ms is None else at_ms)
        if cooldown is not None:
            self.set_cooldown(cooldown)
        return cooldown

    def record_use(self, account: str, at_ms: int | None = None) -> AccountUsage:
        old = self.usage([account]).get(account) or AccountUsage(account=account)
        new = AccountUsage(account=account, attempts=old.attempts + 1,
                           last_used_ms=now_ms() if at_ms is None else at_ms)
        kv_set(self._instance, {_USAGE + account: new.model_dump_json()})
        return new

    def _read(self, prefix: str, accounts: Iterable[str], model: type[M]) -> list[M]:
        keys = {prefix + a for a in accounts}
        values = kv_get(self._instance, keys)
        parsed = []
        for raw in values.values():
            try:
                parsed.append(model.model_validate_json(raw))
            except ValidationError:
                continue  # a cleared entry ("{}"), or one written by a newer version
        return parsed
