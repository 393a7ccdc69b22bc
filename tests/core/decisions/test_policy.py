"""The decision function, branch by branch: every one is reachable and every AgentRun terminates."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from awp_pipelines.core.decisions.policy import AttemptFact, Chain, Target, chain_of, decide, next_in_turn, retry_delay
from awp_pipelines.core.packet.model.execution import TargetSpec
from awp_pipelines.core.packet.model.recovery import RecoveryConfig
from awp_pipelines.core.records.failures import FailureEnvelope

RECOVERY = RecoveryConfig.model_validate({"retry": {"base_delay_ms": 1000, "max_delay_ms": 30000, "jitter": False}})
SOLO = Chain(Target("codex", "gpt-5", None))


def fact(number: int, result: str, cls: str | None = None, mode: str = "run", changed: bool = False,
         provider: str = "codex", account: str | None = None) -> AttemptFact:
    envelope = FailureEnvelope.for_class(cls, "x") if cls else None
    return AttemptFact(number=number, mode=mode, result=result, failure_class=cls,
                       retryable=bool(envelope and envelope.retryable),
                       repairable=bool(envelope and envelope.repairable), provider=provider, account=account,
                       model="gpt-5", workspace_changed=changed)


def test_completed_attempt_completes_the_agent_run() -> None:
    verdict = decide([fact(1, "completed")], RECOVERY, SOLO)
    assert (verdict.action, verdict.status, verdict.terminal) == ("complete", "completed", True)


def test_nominal_success_with_unmet_contract_repairs_until_the_budget_then_fails() -> None:
    history = [fact(1, "verification_failed")]
    assert decide(history, RECOVERY, SOLO).action == "repair"
    history += [fact(2, "verification_failed", mode="repair")]
    assert decide(history, RECOVERY, SOLO).action == "repair"
    history += [fact(3, "verification_failed", mode="repair")]
    verdict = decide(history, RECOVERY, SOLO)
    assert (verdict.action, verdict.status) == ("fail", "verification_failed")


def test_repair_disabled_fails_at_once() -> None:
    recovery = RecoveryConfig.model_validate({"repair": {"enabled": False}})
    assert decide([fact(1, "verification_failed")], recovery, SOLO).action == "fail"


def test_verifier_fault_halts_without_spending_repair() -> None:
    verdict = decide([fact(1, "verifier_fault")], RECOVERY, SOLO)
    assert (verdict.action, verdict.status) == ("fail", "verifier_fault")


def test_commit_failure_is_never_completion() -> None:
    assert decide([fact(1, "commit_failed")], RECOVERY, SOLO).status == "commit_failed"


@pytest.mark.parametrize("result", ["tree_tampered", "secret_in_work"])
def test_a_tampered_tree_or_a_secret_in_the_work_halts_for_a_person(result: str) -> None:
    """Repairing on the same tree would run AWP's git on the tampered metadata, or the secret again."""
    verdict = decide([fact(1, result)], RECOVERY, SOLO)
    assert (verdict.action, verdict.status) == ("fail", result)


def test_a_dirty_tree_refusal_halts_without_retry_or_repair() -> None:
    """Running again would meet the same hand edits: the person has to commit or stash them first."""
    verdict = decide([fact(1, "dirty_tree", "dirty_tree")], RECOVERY, SOLO)
    assert (verdict.action, verdict.status) == ("fail", "dirty_tree")


def test_retryable_failure_retries_within_its_class_budget_with_backoff() -> None:
    history = [fact(i, "provider_failed", "transport_disconnect") for i in range(1, 4)]
    verdict = decide(history, RECOVERY, SOLO)
    assert (verdict.action, verdict.delay_ms) == ("retry", 4000)  # third retry: 2^2 × 1000
    history += [fact(4, "provider_failed", "transport_disconnect"), fact(5, "provider_failed", "transport_disconnect")]
    assert decide(history, RECOVERY, SOLO).action == "fail"  # class budget 4 spent


def test_exhausted_retries_repair_only_when_the_workspace_changed() -> None:
    recovery = RecoveryConfig.model_validate({"retry": {"class_attempts": {"provider_runtime_claim": 1}}})
    unchanged = [fact(1, "provider_failed", "provider_runtime_claim"), fact(2, "provider_failed",
                                                                         "provider_runtime_claim")]
    assert decide(unchanged, recovery, SOLO).action == "fail"
    changed = unchanged[:1] + [fact(2, "provider_failed", "provider_runtime_claim", changed=True)]
    assert decide(changed, recovery, SOLO).action == "repair"


def test_terminal_failure_fails_without_retry() -> None:
    verdict = decide([fact(1, "provider_failed", "approval_denied")], RECOVERY, SOLO)
    assert verdict.action == "fail" and "not retryable" in verdict.reason


def test_rate_limit_moves_to_the_next_account_then_the_fallback_chain_then_retries() -> None:
    chain = chain_of("codex", "gpt-5", "low", ["a", "b"], [TargetSpec(provider="claude", model="sonnet")])
    history = [fact(1, "provider_failed", "provider_rate_limit", account="a")]
    first = decide(history, RECOVERY, chain)
    assert (first.action, first.target) == ("fallback", Target("codex", "gpt-5", "b", "low"))
    history.append(fact(2, "provider_failed", "provider_rate_limit", account="b", mode="fallback"))
    second = decide(history, RECOVERY, chain)
    assert (second.action, second.target.provider, second.target.model) == ("fallback", "claude", "sonnet")
    history.append(fact(3, "provider_failed", "provider_rate_limit", provider="claude", mode="fallback"))
    assert decide(history, RECOVERY, chain).action == "retry"  # every target tried: wait and retry


def test_a_non_fallback_failure_retries_on_the_same_target() -> None:
    chain = chain_of("codex", "gpt-5", None, ["a", "b"], [])
    verdict = decide([fact(1, "provider_failed", "protocol_error", account="a")], RECOVERY, chain)
    assert verdict.action == "retry" and verdict.target is None


def test_retry_delay_is_capped_jittered_and_floored_by_the_provider_suggestion() -> None:
    config = RecoveryConfig.model_validate({"retry": {"base_delay_ms": 1000, "max_delay_ms": 5000, "jitter": True}})
    delays = {retry_delay(config, 10, None, random.Random(seed)) for seed in range(50)}
    assert all(2500 <= d <= 5000 for d in delays) and len(delays) > 1
    fixed = RecoveryConfig.model_validate({"retry": {"base_delay_ms": 100, "max_delay_ms": 5000, "jitter": False}})
    assert retry_delay(fixed, 1, 3000) == 3000
    assert retry_delay(fixed, 1, 60_000) == 5000


CLASSES = ["provider_rate_limit", "provider_capacity", "transport_timeout", "protocol_error",
           "provider_runtime_claim", "approval_denied", "unknown"]
OUTCOMES = st.one_of(
    st.just(("verification_failed", None)),
    st.sampled_from(CLASSES).map(lambda c: ("provider_failed", c)),
)


@settings(max_examples=200, deadline=None)
@given(outcomes=st.lists(OUTCOMES, min_size=60, max_size=60), changed=st.booleans(),
       accounts=st.lists(st.sampled_from(["a", "b", "c"]), unique=True, max_size=3))
def test_every_agent_run_terminates_whatever_the_provider_does(outcomes, changed: bool, accounts) -> None:
    """Feed the decision function failures forever: it must end the AgentRun within the budgets."""
    chain = chain_of("codex", "gpt-5", None, accounts, [TargetSpec(provider="claude")])
    history: list[AttemptFact] = []
    target = Target("codex", "gpt-5", accounts[0] if accounts else None)
    mode = "run"
    for number, (result, cls) in enumerate(outcomes, start=1):
        history.append(fact(number, result, cls, mode=mode, changed=changed, provider=target.provider,
                            account=target.account))
        verdict = decide(history, RecoveryConfig(), chain)
        if verdict.terminal:
            return
        mode = verdict.action
        target = verdict.target or target
    raise AssertionError(f"no terminal decision after {len(outcomes)} attempts")


def test_a_fallback_target_rotates_its_accounts_as_its_own_alias_says_not_as_the_primarys() -> None:
    """The primary fills its first account; the fallback (from an alias rotating between Attempts) moves on
    to its next account with every Attempt there, and a fallback target without a rotation takes the chain's."""
    rotating = TargetSpec(provider="claude", model="sonnet", accounts=["c1", "c2"], rotation="between_attempts")
    chain = chain_of("codex", "gpt-5", None, ["a", "b"], [rotating], rotation="fill_first")
    on_primary = next_in_turn(chain, Target("codex", "gpt-5", "a"))
    assert on_primary.target.account == "a"  # fill_first: the same account for the retry
    assert next_in_turn(chain, Target("claude", "sonnet", "c1")).target.account == "c2"
    assert next_in_turn(chain, Target("claude", "sonnet", "c2")).target.account == "c1"
    plain = chain_of("codex", "gpt-5", None, ["a", "b"], [TargetSpec(provider="claude", model="sonnet",
                                                                       accounts=["c1", "c2"])],
                     rotation="between_attempts")
    assert next_in_turn(plain, Target("claude", "sonnet", "c1")).target.account == "c2"
    assert next_in_turn(plain, Target("codex", "gpt-5", "a")).target.account == "b"


def refused(number: int, cls: str, account: str, provider: str = "codex") -> AttemptFact:
    """A refusal that repeats identically (classify.repeat_fix): deterministic, so not retryable."""
    return AttemptFact(number=number, mode="run", result="provider_failed", failure_class=cls, retryable=False,
                       provider=provider, account=account, model="gpt-5")


def test_a_deterministic_refusal_is_never_retried_but_falls_back_where_the_chain_allows() -> None:
    chain = chain_of("codex", "gpt-5", None, ["a", "b"], [TargetSpec(provider="claude", model="haiku")])
    login = decide([refused(1, "provider_auth_claim", "a")], RECOVERY, chain)
    assert (login.action, login.target) == ("fallback", Target("codex", "gpt-5", "b"))  # another login may work
    model = decide([refused(1, "provider_config_claim", "a")], RECOVERY, chain)
    assert (model.action, model.target) == ("fallback", Target("claude", "haiku", None))  # not b: same model
    alone = decide([refused(1, "provider_config_claim", "a")], RECOVERY, chain_of("codex", "gpt-5", None, ["a"], []))
    assert (alone.action, alone.status) == ("fail", "failed") and "not retried" in alone.reason
