"""Chains by target, not by provider: with the repository's own resources/providers.yaml the seed's free chain
(two models of `opencode-zen`, no account) falls back from `factory-free-useful` to `factory-free-fallback` on
a failed probe and on a rate limit; when nothing is left the AgentRun ends `no_target_available`, the chain
shown, or waits for the first account back; aliases that come back to themselves are refused when loaded."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from repo_paths import REPO_ROOT as REPO

from awp_pipelines.core.decisions.policy import (
    NO_TARGET,
    AttemptFact,
    Chain,
    Target,
    chain_of,
    decide,
    first_target,
    past_unavailable,
)
from awp_pipelines.core.decisions.rotation import Availability, Cooldown
from awp_pipelines.core.packet.errors import PacketError
from awp_pipelines.core.packet.model.recovery import RecoveryConfig
from awp_pipelines.core.packet.packet import load_packet
from awp_pipelines.core.packet.providers_config import load_catalog
from awp_pipelines.core.planning.plan import PlanContext, build_plan
from awp_pipelines.core.records.failures import FailureEnvelope

DEEPSEEK = "opencode/deepseek-v4-flash-free"
NORTH = "openrouter/cohere/north-mini-code:free"
RECOVERY = RecoveryConfig.model_validate({"retry": {"base_delay_ms": 0, "max_delay_ms": 0, "jitter": False,
                                                    "class_attempts": {"provider_rate_limit": 2}}})


def _free_chain(tmp_path: Path) -> Chain:
    """The chain `awp run` binds for a prompt on `factory-free-useful`, from the shipped providers.yaml."""
    root = tmp_path / "pkt"
    (root / "prompts").mkdir(parents=True)
    (root / "packet.yaml").write_text(yaml.safe_dump({"name": "free", "model": "factory-free-useful"}))
    (root / "prompts" / "01_p.prompt.md").write_text("---\nid: '01'\n---\n# P\n")
    catalog = load_catalog(REPO / "resources" / "providers.yaml")
    [p] = build_plan(load_packet(root), PlanContext(catalog=catalog)).prompts
    return chain_of(p.provider, p.model, p.effort, catalog.accounts_of(p.accounts, p.provider), p.fallback,
                    p.rotation, p.probe)


def _limited(number: int, model: str, mode: str = "run") -> AttemptFact:
    envelope = FailureEnvelope.for_class("provider_rate_limit", "429 rate limit")
    return AttemptFact(number=number, mode=mode, result="provider_failed", failure_class="provider_rate_limit",
                       retryable=envelope.retryable, provider="opencode-zen", model=model)


def test_the_shipped_free_chain_is_two_targets_of_one_provider(tmp_path: Path) -> None:
    chain = _free_chain(tmp_path)
    assert [(c.provider, c.account, c.model) for c in chain.candidates()] == [
        ("opencode-zen", None, DEEPSEEK), ("opencode-zen", None, NORTH)]


def test_a_failed_probe_moves_to_the_fallback_aliases_model_and_then_nothing_is_left(tmp_path: Path) -> None:
    chain = _free_chain(tmp_path)
    primary = first_target(chain).target
    assert primary.model == DEEPSEEK
    nxt = past_unavailable(chain, primary, {chain.key_of(primary)})
    assert nxt is not None and (nxt.target.provider, nxt.target.model) == ("opencode-zen", NORTH)
    # Both probes failed: no target is left, so the Attempt is not started on one known to be unavailable.
    assert past_unavailable(chain, nxt.target, {chain.key_of(primary), chain.key_of(nxt.target)}) is None


def test_a_rate_limit_moves_down_the_chain_then_retries_then_ends_no_target_available(tmp_path: Path) -> None:
    chain = _free_chain(tmp_path)
    history = [_limited(1, DEEPSEEK)]
    verdict = decide(history, RECOVERY, chain)
    assert verdict.action == "fallback" and verdict.target is not None and verdict.target.model == NORTH
    assert f"falling back to opencode-zen/{NORTH}" in verdict.reason
    history.append(_limited(2, NORTH, "fallback"))
    verdict = decide(history, RECOVERY, chain)  # the chain is spent: its own budget retries, saying so
    assert verdict.action == "retry" and verdict.target is None
    assert f"no other target of the chain opencode-zen/{DEEPSEEK} → opencode-zen/{NORTH} is left" in verdict.reason
    history += [_limited(3, NORTH, "retry")]
    verdict = decide(history, RECOVERY, chain)
    assert (verdict.action, verdict.status) == ("fail", NO_TARGET)
    assert DEEPSEEK in verdict.reason and NORTH in verdict.reason


def test_a_record_naming_the_default_model_counts_as_its_chain_target() -> None:
    """A chain target with no model is run on the provider's default; the record names that model, and the
    target it ran on is used all the same (not tried again as if it were another)."""
    from awp_pipelines.core.packet.model.execution import TargetSpec

    chain = chain_of("p", None, None, [], [TargetSpec(provider="p", model="m2")])
    assert chain.key_of(Target("p", "provider-default", None)) == ("p", None, None)
    fact = AttemptFact(number=1, mode="run", result="provider_failed", failure_class="provider_rate_limit",
                       retryable=True, provider="p", model="provider-default")
    verdict = decide([fact], RECOVERY, chain)
    assert verdict.action == "fallback" and verdict.target == Target("p", "m2", None)


def test_every_account_resting_waits_for_the_first_back_not_a_resting_start() -> None:
    chain = chain_of("codex", "gpt-5", None, ["a", "b"], [])
    now = 1_000_000
    rests = Availability(now, {"a": Cooldown(account="a", until_ms=now + 90_000, failure_class="provider_rate_limit"),
                               "b": Cooldown(account="b", until_ms=now + 30_000, failure_class="provider_rate_limit")})
    pick = first_target(chain, rests)
    assert (pick.target.account, pick.wait_ms) == ("b", 30_000) and "b is back in 30s" in pick.why
    limited = AttemptFact(number=1, mode="run", result="provider_failed", failure_class="provider_rate_limit",
                          retryable=True, provider="codex", account="b", model="gpt-5")
    retried = decide([limited, limited.__class__(**{**limited.__dict__, "number": 2, "account": "a"})],
                     RECOVERY, chain, accounts=rests)
    assert retried.action == "retry" and retried.delay_ms == 30_000 and "first account's cooldown" in retried.reason


def test_an_auth_refusal_is_shown_as_one_not_as_a_rest_after_a_limit() -> None:
    chain = chain_of("codex", "gpt-5", None, ["a", "b"], [])
    now = 1_000_000
    refused = Availability(now, {"a": Cooldown(account="a", until_ms=now + 300_000,
                                               failure_class="provider_auth_claim", reason="Not logged in")})
    pick = first_target(chain, refused)
    assert pick.target.account == "b"
    assert "a refused its login (auth)" in pick.why and "limit" not in pick.why


def test_an_alias_chain_that_comes_back_to_itself_is_refused_with_the_cycle(tmp_path: Path) -> None:
    file = tmp_path / "providers.yaml"
    file.write_text(yaml.safe_dump({"aliases": {
        "x": {"targets": [{"provider": "codex"}], "fallback": ["y"]},
        "y": {"targets": [{"provider": "claude"}], "fallback": ["z"]},
        "z": {"targets": [{"provider": "gemini"}], "fallback": ["x"]}}}))
    with pytest.raises(PacketError) as err:
        load_catalog(file)
    assert "x → y → z → x" in str(err.value) and "fallback" in str(err.value)


def test_aliases_may_chain_aliases(tmp_path: Path) -> None:
    file = tmp_path / "providers.yaml"
    file.write_text(yaml.safe_dump({"aliases": {
        "x": {"targets": [{"provider": "codex", "model": "gpt-5"}], "fallback": ["y"]},
        "y": {"targets": [{"provider": "claude", "model": "haiku"}], "fallback": ["z"]},
        "z": {"targets": [{"provider": "gemini", "model": "gemini-2.5-pro"}]}}}))
    assert load_catalog(file).aliases["x"].fallback == ["y"]
