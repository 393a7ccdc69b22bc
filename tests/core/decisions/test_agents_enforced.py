"""Agents enforced, at the decision layer: a reviewer whose definition allows one provider is never run on
another, at any of ten picks across the first target, rotation, fallback, a failed probe and a repair; a chain
with no target it allows is a policy denial (a named failure), never a run elsewhere; its permission mode,
tools and isolation are the Attempt's (the plan), and `awp plan` shows the agent as applied."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from pydantic import ValidationError
from repo_paths import TESTS

from awp_pipelines.cli import cli
from awp_pipelines.core.decisions.agent_run import DecisionInput, agent_run_status
from awp_pipelines.core.decisions.next_launches import first_launch, manual_launch, repair_launch
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
from awp_pipelines.core.packet.agents import AgentSpec
from awp_pipelines.core.packet.model.execution import TargetSpec
from awp_pipelines.core.packet.model.recovery import RecoveryConfig
from awp_pipelines.core.packet.packet import load_packet
from awp_pipelines.core.packet.providers_config import load_catalog
from awp_pipelines.core.planning.plan import PlanContext, build_plan

RECOVERY = RecoveryConfig.model_validate({"retry": {"base_delay_ms": 0, "max_delay_ms": 0, "jitter": False}})
# The plan's primary is `simulated`; claude and gemini come before codex in the fallback.
FALLBACK = [TargetSpec(provider="claude", model="haiku", accounts=["A", "B"]),
            TargetSpec(provider="codex", model="gpt-5", accounts=["X", "Y"]),
            TargetSpec(provider="gemini", model="gemini-2.5-pro")]
NOW = 10_000
FAVOURS_Y = Availability(NOW, usage={"X": AccountUsage(account="X", attempts=9, last_used_ms=9_000),
                                     "Y": AccountUsage(account="Y", attempts=0, last_used_ms=0)})
X_RESTS = Availability(NOW, cooldowns={"X": Cooldown(account="X", until_ms=99_000,
                                                     failure_class="provider_rate_limit")})


def reviewer(rotation: str = "fill_first") -> Chain:
    return chain_of("simulated", "simulated-demo", None, [], FALLBACK, rotation,  # type: ignore[arg-type]
                    agent=("reviewer", ["codex"], []))


def failed(number: int, cls: str, account: str, mode: str = "run", retryable: bool = True) -> AttemptFact:
    return AttemptFact(number=number, mode=mode, result="provider_failed", failure_class=cls, retryable=retryable,
                       provider="codex", account=account, model="gpt-5")


def _state(chain: Chain, *facts: AttemptFact) -> DecisionInput:
    return DecisionInput(prompt="02", recovery=RECOVERY, chain=chain, facts=facts, started=len(facts))


PICKS: list[tuple[str, Callable[[], Target | None]]] = [
    ("first target", lambda: first_target(reviewer()).target),
    ("first target, round_robin", lambda: first_target(reviewer("round_robin"), FAVOURS_Y).target),
    ("first target, X resting", lambda: first_target(reviewer(), X_RESTS).target),
    ("rotation between Attempts", lambda: next_in_turn(reviewer("between_attempts"), Target("codex", "gpt-5", "X"))
     .target),
    ("fallback after a rate limit", lambda: decide([failed(1, "provider_rate_limit", "X")], RECOVERY,
                                                   reviewer()).target),
    ("fallback after a refused login", lambda: decide([failed(1, "provider_auth_claim", "X", retryable=False)],
                                                      RECOVERY, reviewer()).target),
    ("past a failed probe", lambda: getattr(past_unavailable(reviewer(), Target("codex", "gpt-5", "X"),
                                                             {("codex", "X", "gpt-5")}), "target", None)),
    ("retry once the chain is spent", lambda: manual_launch(_state(reviewer(), failed(1, "provider_capacity", "X"),
                                                                   failed(2, "provider_capacity", "Y", "fallback")))
     .target),
    ("repair of unmet items", lambda: manual_launch(_state(reviewer("between_attempts"), AttemptFact(
        number=1, mode="run", result="verification_failed", provider="codex", account="X", model="gpt-5"))).target),
    ("repair asked for by hand", lambda: getattr(repair_launch(_state(reviewer(), failed(1, "unknown", "Y"))),
                                                 "target", None)),
]


@pytest.mark.parametrize(("what", "pick"), PICKS, ids=[w for w, _ in PICKS])
def test_a_reviewer_restricted_to_codex_is_never_run_elsewhere(what: str, pick: Callable[[], Target | None]) -> None:
    target = pick()
    assert target is not None and target.provider == "codex", (what, target)


def test_ten_picks_are_ten() -> None:
    assert len(PICKS) == 10 and len({w for w, _ in PICKS}) == 10


def test_a_chain_with_no_target_the_agent_allows_is_a_policy_denial_not_a_run_elsewhere() -> None:
    chain = chain_of("simulated", "simulated-demo", None, [], [TargetSpec(provider="claude", model="haiku")],
                     agent=("reviewer", ["codex"], []))
    assert chain.candidates() == []
    assert chain.denied is not None and "agent reviewer may run on no target" in chain.denied
    assert "provider 'simulated' is not among its providers (codex)" in chain.denied
    verdict = decide([], RECOVERY, chain)
    assert (verdict.action, verdict.status) == ("fail", "policy_denial")
    status = agent_run_status(_state(chain))
    assert (status.state, status.cause) == ("failed", "policy_denial")


def test_an_agents_models_filter_every_pick_too() -> None:
    chain = chain_of("codex", "gpt-5", None, [], [TargetSpec(provider="codex", model="o3")],
                     agent=("cheap", [], ["o3"]))
    assert first_launch(_state(chain)).target == Target("codex", "o3", None)


def test_an_agent_definition_is_strict_and_typed() -> None:
    with pytest.raises(ValidationError, match="permission_mode"):
        AgentSpec.model_validate({"role": "reviewer", "permission_mode": "read-only"})
    with pytest.raises(ValidationError, match="sandboxed"):
        AgentSpec.model_validate({"role": "reviewer", "sandboxed": True})


def _packet(root: Path, prompt_front: dict) -> Path:
    (root / "prompts").mkdir(parents=True)
    (root / "packet.yaml").write_text(yaml.safe_dump({"name": "rev", "provider": "codex", "model": "gpt-5",
                                                      "fallback": ["simulated"], "isolation": "none"}))
    (root / "prompts" / "01_review.prompt.md").write_text(f"---\n{yaml.safe_dump({'id': '01', **prompt_front})}"
                                                         "---\n# Review\n")
    (root / "providers.yaml").write_text(yaml.safe_dump({"agents": {"reviewer": {
        "role": "reviewer", "providers": ["codex"], "permission_mode": "plan", "allowed_tools": ["Read", "Grep"],
        "isolation": "sandbox"}}}))
    return root


def test_the_agents_permission_mode_tools_and_isolation_are_the_attempts(tmp_path: Path) -> None:
    root = _packet(tmp_path / "pkt", {"agent": "reviewer", "permission_mode": "bypass",
                                      "allowed_tools": ["Read", "Write"]})
    catalog = load_catalog(root / "providers.yaml")
    [p] = build_plan(load_packet(root), PlanContext(catalog=catalog)).prompts
    assert (p.permission_mode, p.allowed_tools, p.isolation) == ("plan", ["Read"], "sandbox")
    assert p.sources["permission_mode"] == p.sources["isolation"] == "agent reviewer"
    assert p.agent_providers == ["codex"]
    assert p.argv is not None and "--sandbox read-only" in " ".join(p.argv)  # codex runs `plan` read-only
    result = CliRunner().invoke(cli, ["plan", str(root), "--providers", str(root / "providers.yaml")],
                                terminal_width=400)
    text = " ".join(result.output.split())
    assert "only providers codex" in text and "permission plan" in text and "tools Read" in text, text
    assert "isolation sandbox" in text and "never on simulated/" in text


@pytest.mark.slow
def test_awp_run_refuses_a_reviewer_whose_chain_it_may_not_run_on(tmp_path: Path,
                                                                  make_git_repo: Callable[[Path], Path]) -> None:
    """The seed's case: a reviewer restricted to codex on a packet that runs on `simulated` used to run there,
    exit 0. Now no Attempt starts and the AgentRun fails as a policy denial."""
    import json
    import sys

    sys.path.insert(0, str(TESTS / "e2e"))
    from e2e_support import awp

    root = tmp_path / "pkt"
    make_git_repo(root / "workspace")
    (root / "prompts").mkdir(parents=True)
    (root / "packet.yaml").write_text(yaml.safe_dump({"name": "rev", "provider": "simulated",
                                                      "repos": {"app": {"path": "./workspace", "default": True}}}))
    (root / "prompts" / "01_review.prompt.md").write_text(
        "---\n" + yaml.safe_dump({"id": "01", "agent": "reviewer", "verify": {"files_exist": ["r.txt"]},
                                  "simulate": {"attempts": [{"writes": [{"path": "r.txt", "text": "ok"}]}]}})
        + "---\n# Review\n")
    (root / "providers.yaml").write_text(yaml.safe_dump({"agents": {"reviewer": {"role": "reviewer",
                                                                                 "providers": ["codex"]}}}))
    result = awp("run", root, "--providers", root / "providers.yaml", "--json")
    assert result.exit_code != 0
    assert not (root / "workspace" / "r.txt").exists()
    [prompt] = json.loads(result.stdout)["prompts"]
    assert (prompt["state"], prompt["result"], prompt["attempt"]) == ("failed", "not_run", None), prompt
    assert prompt["message"].startswith("policy denial: agent reviewer may run on no target"), prompt
