"""next_launches: what a packet run launches next, from its stored history (pure; both drivers use it)."""

from __future__ import annotations

from awp_pipelines.launches import PromptState, manual_launch, next_launches
from awp_pipelines.model.recovery import RecoveryConfig
from awp_pipelines.policy import AttemptFact, Target, chain_of, interrupted_fact
from awp_pipelines.tags import RunIntent

CHAIN = chain_of("simulated", "m", None, ["a", "b"], [])
RECOVERY = RecoveryConfig.model_validate({"retry": {"base_delay_ms": 1000, "max_delay_ms": 1000, "jitter": False}})


def _fact(number: int, result: str, mode: str = "run", account: str = "a", cls: str | None = None,
          retryable: bool = False) -> AttemptFact:
    return AttemptFact(number=number, mode=mode, result=result, failure_class=cls, retryable=retryable,
                       provider="simulated", account=account, model="m")


def _state(prompt: str, *facts: AttemptFact, deps: tuple[str, ...] = (), busy: bool = False,
           ended: float | None = 100.0) -> PromptState:
    return PromptState(prompt, RECOVERY, CHAIN, deps, tuple(facts), len(facts), busy, ended if facts else None,
                       f"run-{prompt}-{len(facts)}" if facts else None)


def test_a_prompt_with_no_history_starts_once_its_upstream_prompts_completed() -> None:
    waiting = next_launches([_state("01", _fact(1, "verification_failed")), _state("02", deps=("01",))], 100.0)
    assert [(launch.prompt, launch.mode) for launch in waiting.due] == [("01", "repair")]
    released = next_launches([_state("01", _fact(1, "verification_failed"), _fact(2, "completed", "repair")),
                              _state("02", deps=("01",))], 100.0)
    [launch] = released.due
    assert (launch.prompt, launch.mode, launch.number, launch.target.account) == ("02", "run", 1, "a")
    assert launch.reason == "upstream 01 completed" and launch.parent_run is None


def test_a_busy_prompt_is_left_alone_and_a_completed_one_launches_nothing() -> None:
    outlook = next_launches([_state("01", _fact(1, "verification_failed"), busy=True),
                             _state("02", _fact(1, "completed"))], 100.0)
    assert outlook.idle and outlook.ended == {}


def test_a_retry_waits_for_its_backoff_then_becomes_due() -> None:
    limited = _fact(1, "provider_failed", cls="transport_disconnect", retryable=True)
    early = next_launches([_state("01", limited, ended=100.0)], 100.5)
    assert not early.due and [w.due_at for w in early.waiting] == [101.0]
    [launch] = next_launches([_state("01", limited, ended=100.0)], 101.0).due
    assert (launch.mode, launch.number, launch.parent_run, launch.target.account) == ("retry", 2, "run-01-1", "a")


def test_a_rate_limit_falls_back_to_the_next_account_with_its_reason() -> None:
    limited = _fact(1, "provider_failed", cls="provider_rate_limit", retryable=True)
    [launch] = next_launches([_state("01", limited)], 200.0).due
    assert (launch.mode, launch.target.account) == ("fallback", "b")
    assert "provider_rate_limit" in launch.reason


def test_an_ended_agent_run_is_reported_with_the_decisions_reason_and_blocks_its_downstream() -> None:
    failed = [_fact(n, "verification_failed", "run" if n == 1 else "repair") for n in (1, 2, 3)]
    outlook = next_launches([_state("01", *failed), _state("02", deps=("01",))], 100.0)
    assert outlook.idle and "after 2 repair(s)" in outlook.ended["01"]


def test_an_interrupted_attempt_counts_against_the_budget_and_is_retried() -> None:
    dead = interrupted_fact(1, "run", Target("simulated", "m", "a"))
    [launch] = next_launches([_state("01", dead)], 500.0).due
    assert (launch.mode, launch.number) == ("retry", 2) and "interrupted" in launch.reason


def test_a_launch_by_hand_continues_the_agent_run_even_after_its_budget() -> None:
    failed = [_fact(n, "verification_failed", "run" if n == 1 else "repair") for n in (1, 2, 3)]
    launch = manual_launch(_state("01", *failed))
    assert (launch.mode, launch.number) == ("repair", 4) and launch.reason.startswith("launched by hand after")
    assert manual_launch(_state("01")).mode == "run"


def test_launch_tags_round_trip_through_run_intent() -> None:
    [launch] = next_launches([_state("01", _fact(1, "verification_failed"))], 100.0).due
    tags = launch.intent("pr-1").to_tags("demo", "01")
    intent = RunIntent.from_tags(tags)
    assert intent == launch.intent("pr-1")
    assert tags["awp/attempt"] == "pr-1.01.a2" and tags["awp/agent_run"] == "pr-1.01"
    assert tags["awp/parent_run"] == "run-01-1" and tags["awp/mode"] == "repair"


def test_a_resting_account_is_passed_over_for_a_fallback_and_for_a_new_agent_run() -> None:
    limited = _fact(1, "provider_failed", cls="provider_rate_limit", retryable=True)
    state = PromptState("01", RECOVERY, chain_of("simulated", "m", None, ["a", "b", "c"], []), (), (limited,), 1,
                        last_ended=100.0, last_run="run-1", resting=frozenset({"b"}))
    [launch] = next_launches([state], 200.0).due
    assert (launch.mode, launch.target.account) == ("fallback", "c")  # b rests under a stored cooldown
    fresh = PromptState("02", RECOVERY, CHAIN, resting=frozenset({"a"}))
    [first] = next_launches([fresh], 200.0).due
    assert first.target.account == "b" and "a is resting" in first.reason
