"""Spend caps in the pure decision: no further Attempt once the recorded spend has reached a cap."""

from __future__ import annotations

from awp_pipelines.core.decisions.agent_run import DecisionInput
from awp_pipelines.core.decisions.budget import Budget, Spend, total
from awp_pipelines.core.decisions.next_launches import next_launches
from awp_pipelines.core.decisions.policy import AttemptFact, chain_of, decide
from awp_pipelines.core.packet.model.budget import BudgetConfig
from awp_pipelines.core.packet.model.recovery import RecoveryConfig

CHAIN = chain_of("simulated", "m", None, [], [])
RECOVERY = RecoveryConfig.model_validate({"repair": {"max_attempts": 5}})
FIVE_CENTS = BudgetConfig(max_cost_usd=0.05)


def _failed(number: int, cost: float = 0.02, tokens: int = 10) -> AttemptFact:
    return AttemptFact(number=number, mode="run" if number == 1 else "repair", result="verification_failed",
                       provider="simulated", model="m", cost_usd=cost, tokens=tokens)


def _state(prompt: str, *facts: AttemptFact, budget: Budget, deps: tuple[str, ...] = ()) -> DecisionInput:
    return DecisionInput(prompt, RECOVERY, CHAIN, deps, tuple(facts), len(facts), last_ended=100.0 if facts else None,
                       budget=budget)


def test_a_packet_capped_at_5_cents_stops_after_the_third_2_cent_attempt() -> None:
    for count, expected in ((1, "repair"), (2, "repair"), (3, "budget_exhausted")):
        facts = [_failed(n) for n in range(1, count + 1)]
        budget = Budget(packet=FIVE_CENTS, packet_spent=total(f.spend for f in facts))
        outlook = next_launches([_state("01", *facts, budget=budget)], 200.0)
        if expected == "repair":
            assert [launch.mode for launch in outlook.due] == ["repair"], count
        else:
            assert outlook.idle and outlook.ended_status == {"01": "budget_exhausted"}
            assert outlook.ended["01"] == "budget exhausted: the packet run spent $0.0600 of its $0.05 cap"


def test_the_decision_refuses_the_next_attempt_but_never_undoes_a_completion() -> None:
    over = Budget(packet=FIVE_CENTS, packet_spent=Spend(0.05))
    verdict = decide([_failed(1)], RECOVERY, CHAIN, budget=over)
    assert (verdict.action, verdict.status) == ("fail", "budget_exhausted")
    done = AttemptFact(number=1, mode="run", result="completed", provider="simulated", cost_usd=1.0)
    assert decide([done], RECOVERY, CHAIN, budget=over).status == "completed"
    within = Budget(FIVE_CENTS, packet_spent=Spend(0.049))
    assert decide([_failed(1)], RECOVERY, CHAIN, budget=within).action == "repair"


def test_a_prompt_token_cap_counts_only_its_own_agent_run() -> None:
    prompt_cap = Budget(prompt=BudgetConfig(max_tokens=25), packet_spent=Spend(0.0, 10_000))
    [launch] = next_launches([_state("01", _failed(1, tokens=20), budget=prompt_cap)], 200.0).due
    assert launch.mode == "repair"  # the packet run spent far more, but the cap is the prompt's
    outlook = next_launches([_state("01", _failed(1, tokens=20), _failed(2, tokens=5), budget=prompt_cap)], 200.0)
    assert outlook.ended["01"] == "budget exhausted: the prompt spent 25 of its 25 token cap"


def test_a_downstream_prompt_does_not_start_once_the_packet_run_is_out_of_budget() -> None:
    done = AttemptFact(number=1, mode="run", result="completed", provider="simulated", cost_usd=0.05)
    spent = Budget(packet=FIVE_CENTS, packet_spent=Spend(0.05))
    outlook = next_launches([_state("01", done, budget=spent), _state("02", budget=spent, deps=("01",))], 200.0)
    assert outlook.idle and outlook.ended_status == {"02": "budget_exhausted"}
    fine = Budget(packet=FIVE_CENTS, packet_spent=Spend(0.01))
    [launch] = next_launches([_state("01", done, budget=fine), _state("02", budget=fine, deps=("01",))], 200.0).due
    assert (launch.prompt, launch.mode) == ("02", "run")


def test_an_attempt_stopped_at_a_cap_mid_session_ends_the_agent_run_budget_exhausted() -> None:
    stopped = AttemptFact(number=1, mode="run", result="provider_failed", failure_class="budget_exhausted",
                          provider="simulated", model="m", cost_usd=0.0, tokens=10, workspace_changed=True)
    # Even where the records' figures stay under the cap (a cost only the stream knew), nothing retries or repairs.
    verdict = decide([stopped], RECOVERY, CHAIN, budget=Budget(packet=FIVE_CENTS))
    assert (verdict.action, verdict.status) == ("fail", "budget_exhausted")
