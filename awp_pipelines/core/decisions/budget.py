"""Spend caps: is a packet run or an AgentRun out of budget? Pure: no Dagster, no clock.

Spend is what the stored Attempt records report (every recorded Attempt counts, whatever its result),
so a restart or the other driver sees the same figures.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from awp_pipelines.core.packet.model.budget import BudgetConfig


@dataclass(frozen=True)
class Spend:
    cost_usd: float = 0.0
    tokens: int = 0

    def __add__(self, other: Spend) -> Spend:
        return Spend(round(self.cost_usd + other.cost_usd, 6), self.tokens + other.tokens)

    def describe(self) -> str:
        return f"${self.cost_usd:.4f}, {self.tokens} tokens"


def total(spends: Iterable[Spend]) -> Spend:
    out = Spend()
    for spend in spends:
        out = out + spend
    return out


@dataclass(frozen=True)
class Budget:
    """The caps that bind one AgentRun, and what its packet run and it have spent so far."""

    packet: BudgetConfig | None = None  # over the whole packet run
    prompt: BudgetConfig | None = None  # over this prompt's AgentRun
    packet_spent: Spend = Spend()
    agent_run_spent: Spend = Spend()

    def exhausted(self) -> str | None:
        """Why no further Attempt may start (with the figures), or None while within every cap."""
        for scope, cap, spent in (("packet run", self.packet, self.packet_spent),
                                  ("prompt", self.prompt, self.agent_run_spent)):
            if cap is None:
                continue
            # At the cap the next Attempt can only pass it: reaching it is enough to stop.
            if cap.max_cost_usd is not None and spent.cost_usd >= cap.max_cost_usd:
                return f"budget exhausted: the {scope} spent ${spent.cost_usd:.4f} of its ${cap.max_cost_usd:g} cap"
            if cap.max_tokens is not None and spent.tokens >= cap.max_tokens:
                return f"budget exhausted: the {scope} spent {spent.tokens} of its {cap.max_tokens} token cap"
        return None

    def after(self, attempt: Spend) -> Budget:
        """The same caps once a running Attempt's spend so far is added to both scopes."""
        return replace(self, packet_spent=self.packet_spent + attempt, agent_run_spent=self.agent_run_spent + attempt)


class BudgetExhausted(BaseException):
    """Raised where an Attempt's running spend reached a cap (the sink's usage hook): the session stops there,
    as it does on a signal, its partial work checkpointed. A BaseException, so no `except Exception` of an
    adapter's parser swallows it."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)
