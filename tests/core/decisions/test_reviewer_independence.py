"""Reviewer/coder independence at every pick: a reviewer whose coder used account A never gets A, whether the
target is the first one, a rotation's pick, a fallback, or the one past a failed probe; when only A is left
the AgentRun ends with a policy denial, never a silent pick."""

from __future__ import annotations

from dataclasses import replace

import pytest

from awp_pipelines.core.decisions.agent_run import AgentRunStatus, DecisionInput, agent_run_status
from awp_pipelines.core.decisions.policy import (
    AttemptFact,
    Chain,
    Target,
    chain_of,
    decide,
    first_target,
    next_in_turn,
    past_unavailable,
)
from awp_pipelines.core.decisions.rotation import AccountUsage, Availability, Cooldown
from awp_pipelines.core.packet.agents import AgentSpec, agent_of
from awp_pipelines.core.packet.model.execution import TargetSpec
from awp_pipelines.core.packet.model.recovery import RecoveryConfig

RECOVERY = RecoveryConfig.model_validate({"retry": {"base_delay_ms": 0, "max_delay_ms": 0, "jitter": False}})
CODER_USED = frozenset({("claude", "A")})  # the coder's Attempt ran on claude with account A
FALLBACK = [TargetSpec(provider="claude", model="sonnet", accounts=["A"]), TargetSpec(provider="codex", model="gpt-5")]
# A used longest ago and least: round_robin and least_used would both pick it first.
FAVOURS_A = Availability(now_ms=10_000, usage={"A": AccountUsage(account="A", attempts=0, last_used_ms=0),
                                               "B": AccountUsage(account="B", attempts=5, last_used_ms=9_000),
                                               "C": AccountUsage(account="C", attempts=9, last_used_ms=9_500)})
B_RESTS = Availability(now_ms=10_000, cooldowns={"B": Cooldown(account="B", until_ms=99_000,
                                                               failure_class="provider_rate_limit")})


def chain(rotation: str, accounts: tuple[str, ...] = ("A", "B", "C")) -> Chain:
    return replace(chain_of("claude", "haiku", None, list(accounts), FALLBACK, rotation), excluded=CODER_USED)  # type: ignore[arg-type]


def failed(number: int, cls: str, account: str | None, provider: str = "claude", mode: str = "run") -> AttemptFact:
    return AttemptFact(number=number, mode=mode, result="provider_failed", failure_class=cls, retryable=True,
                       provider=provider, account=account, model="haiku")


PICKS = [
    # (what picks, rotation, how it is asked) → where the reviewer runs
    ("first target", "fill_first", lambda c: first_target(c).target, ("claude", "B")),
    ("first target", "round_robin", lambda c: first_target(c, FAVOURS_A).target, ("claude", "B")),
    ("first target", "least_used", lambda c: first_target(c, FAVOURS_A).target, ("claude", "B")),
    ("first target, B resting", "fill_first", lambda c: first_target(c, B_RESTS).target, ("claude", "C")),
    ("rotation between Attempts", "between_attempts",
     lambda c: next_in_turn(c, Target("claude", "haiku", "C")).target, ("claude", "B")),
    ("rotation between Attempts", "between_attempts",
     lambda c: next_in_turn(c, Target("claude", "haiku", "B")).target, ("claude", "C")),
    ("fallback after a rate limit", "fill_first",
     lambda c: decide([failed(1, "provider_rate_limit", "B")], RECOVERY, c).target, ("claude", "C")),
    ("fallback past the coder's account on another model", "fill_first",
     lambda c: decide([failed(1, "provider_rate_limit", "B"), failed(2, "provider_capacity", "C", mode="fallback")],
                      RECOVERY, c).target, ("codex", None)),
    ("fallback after a login refusal", "round_robin",
     lambda c: decide([replace(failed(1, "provider_auth_claim", "B"), retryable=False)], RECOVERY, c).target,
     ("claude", "C")),
    ("past a failed probe", "fill_first",
     lambda c: past_unavailable(c, Target("claude", "haiku", "B"), {("claude", "B", "haiku"),
                                                                   ("claude", "C", "haiku")}).target,
     ("codex", None)),
]


@pytest.mark.parametrize(("what", "rotation", "pick", "where"), PICKS, ids=[f"{w} ({r})" for w, r, _, _ in PICKS])
def test_a_reviewer_never_gets_the_account_its_coder_used(what: str, rotation: str, pick, where) -> None:  # type: ignore[no-untyped-def]
    target = pick(chain(rotation))
    assert (target.provider, target.account) == where
    assert (target.provider, target.account) not in CODER_USED
    # The same pick without the coder's exclusion would be A (or the fallback's A): the rule is what moved it.
    free = replace(chain(rotation), excluded=frozenset())
    assert all((c.provider, c.account) != ("claude", "A") for c in chain(rotation).candidates())
    assert any((c.provider, c.account) == ("claude", "A") for c in free.candidates())


def test_a_chain_of_only_the_coders_account_is_a_policy_denial_not_a_pick() -> None:
    only_a = replace(chain_of("claude", "haiku", None, ["A"], [TargetSpec(provider="claude", accounts=["A"])]),
                     excluded=CODER_USED)
    assert only_a.denied is not None and "claude/A" in only_a.denied
    verdict = decide([], RECOVERY, only_a)
    assert (verdict.action, verdict.status) == ("fail", "policy_denial")
    state = DecisionInput(prompt="02", recovery=RECOVERY, chain=only_a, deps=("01",))
    assert agent_run_status(state).state == "planned"  # held by its coder until that completes
    status = agent_run_status(state, {"01": AgentRunStatus("completed")})
    assert (status.state, status.cause) == ("failed", "policy_denial") and "independence" in status.reason


def test_an_agent_word_names_a_catalog_entry_or_a_builtin_role() -> None:
    strict = AgentSpec(role="reviewer", providers=["codex"], models=["gpt-5"])
    assert agent_of("strict-reviewer", {"strict-reviewer": strict}) is strict
    assert agent_of("coder", {}) == AgentSpec(role="coder")
    assert agent_of("poet", {}) is None
    assert strict.refuses("claude", "haiku") is not None and strict.refuses("codex", "gpt-5.1") is None
