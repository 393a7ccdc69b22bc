"""next_launches: what a packet run launches next, from its stored history (pure; both drivers use it)."""

from __future__ import annotations

from awp_pipelines.core.decisions.agent_run import DecisionInput
from awp_pipelines.core.decisions.next_launches import Launch, continuation, manual_launch, next_launches
from awp_pipelines.core.decisions.policy import AttemptFact, Target, chain_of, interrupted_fact
from awp_pipelines.core.decisions.rotation import AccountUsage, Availability, Cooldown
from awp_pipelines.core.packet.model.recovery import RecoveryConfig

CHAIN = chain_of("simulated", "m", None, ["a", "b"], [])
RECOVERY = RecoveryConfig.model_validate({"retry": {"base_delay_ms": 1000, "max_delay_ms": 1000, "jitter": False}})


def _fact(number: int, result: str, mode: str = "run", account: str = "a", cls: str | None = None,
          retryable: bool = False) -> AttemptFact:
    return AttemptFact(number=number, mode=mode, result=result, failure_class=cls, retryable=retryable,
                       provider="simulated", account=account, model="m")


def _resting(*accounts: str) -> Availability:
    rests = {a: Cooldown(account=a, until_ms=2_000, failure_class="provider_rate_limit") for a in accounts}
    return Availability(now_ms=1_000, cooldowns=rests)


def _state(prompt: str, *facts: AttemptFact, deps: tuple[str, ...] = (), busy: bool = False,
           ended: float | None = 100.0) -> DecisionInput:
    return DecisionInput(prompt, RECOVERY, CHAIN, deps, tuple(facts), len(facts), busy, ended if facts else None,
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


def test_launch_tags_name_the_packet_run_and_the_account_and_leave_the_attempt_to_its_metadata() -> None:
    [launch] = next_launches([_state("01", _fact(1, "verification_failed"))], 100.0).due
    tags = launch.run_tags("pr-1")
    # The Runs list shows each tag on a line of its own: only the packet run and the account the run queue
    # limits on; the Attempt, its mode and target are in the Attempt's metadata.
    assert tags == {"awp/packet_run": "pr-1", "awp/account": launch.target.account}
    assert (launch.number, launch.mode) == (2, "repair")


def test_a_resting_account_is_passed_over_for_a_fallback_and_for_a_new_agent_run() -> None:
    limited = _fact(1, "provider_failed", cls="provider_rate_limit", retryable=True)
    state = DecisionInput("01", RECOVERY, chain_of("simulated", "m", None, ["a", "b", "c"], []), (), (limited,), 1,
                        last_ended=100.0, last_run="run-1", accounts=_resting("b"))
    [launch] = next_launches([state], 200.0).due
    assert (launch.mode, launch.target.account) == ("fallback", "c")  # b rests under a stored cooldown
    fresh = DecisionInput("02", RECOVERY, CHAIN, accounts=_resting("a"))
    [first] = next_launches([fresh], 200.0).due
    assert first.target.account == "b" and "a is resting" in first.reason


# Rotation: which account of a target with several each launch gets, from the stored usage and cooldowns.
ROTATING = ("a", "b", "c")


def _rotating(rotation: str, *facts: AttemptFact, prompt: str = "01",
              accounts: Availability = Availability(now_ms=1_000)) -> DecisionInput:
    chain = chain_of("simulated", "m", None, list(ROTATING), [], rotation)  # type: ignore[arg-type]
    return DecisionInput(prompt, RECOVERY, chain, (), tuple(facts), len(facts), last_ended=0.0 if facts else None,
                       last_run="run-x" if facts else None, accounts=accounts)


def _used(**attempts: int) -> Availability:
    """Stored usage: attempts per account, each last used at its count (more uses = more recently)."""
    return Availability(now_ms=1_000, usage={a: AccountUsage(account=a, attempts=n, last_used_ms=n)
                                             for a, n in attempts.items()})


def _accounts_of_fresh_prompts(rotation: str, accounts: Availability = Availability(now_ms=1_000)) -> list[str | None]:
    states = [_rotating(rotation, prompt=p, accounts=accounts) for p in ("01", "02", "03", "04")]
    return [launch.target.account for launch in next_launches(states, 0.0).due]


def test_between_attempts_gives_each_attempt_of_an_agent_run_the_next_account() -> None:
    unmet = [_fact(1, "verification_failed", account="a"), _fact(2, "verification_failed", "repair", account="b")]
    steps = [continuation(_rotating("between_attempts", *unmet[:n])) for n in (1, 2)]
    # After the last account comes the first again.
    steps.append(continuation(_rotating("between_attempts", _fact(1, "verification_failed", account="c"))))
    assert [(s.mode, s.target.account) for s in steps if isinstance(s, Launch)] == [
        ("repair", "b"), ("repair", "c"), ("repair", "a")]
    assert "between_attempts: b follows a" in steps[0].reason  # type: ignore[union-attr]
    # A resting account is passed over; a new AgentRun starts on the first.
    step = continuation(_rotating("between_attempts", unmet[0], accounts=_resting("b")))
    assert isinstance(step, Launch) and step.target.account == "c"
    assert _accounts_of_fresh_prompts("between_attempts") == ["a", "a", "a", "a"]


def test_round_robin_spreads_new_agent_runs_over_the_accounts_used_longest_ago() -> None:
    assert _accounts_of_fresh_prompts("round_robin") == ["a", "b", "c", "a"]
    assert _accounts_of_fresh_prompts("round_robin", _used(a=3, b=1, c=2)) == ["b", "c", "a", "b"]
    # Within an AgentRun a retry stays on its account: round_robin picks where AgentRuns start.
    step = continuation(_rotating("round_robin", _fact(1, "verification_failed", account="b"), accounts=_used(a=5)))
    assert isinstance(step, Launch) and step.target.account == "b"


def test_least_used_takes_the_account_with_the_fewest_stored_attempts() -> None:
    assert _accounts_of_fresh_prompts("least_used", _used(a=2, b=0, c=1)) == ["b", "b", "c", "a"]
    # A fallback goes to the least used account the AgentRun has not tried yet.
    limited = _fact(1, "provider_failed", account="b", cls="provider_rate_limit", retryable=True)
    step = continuation(_rotating("least_used", limited, accounts=_used(a=4, b=0, c=1)))
    assert isinstance(step, Launch) and (step.mode, step.target.account) == ("fallback", "c")
    assert "least_used: c has the fewest attempts" in step.reason


def test_fill_first_sticks_to_the_first_account_until_it_rests() -> None:
    assert _accounts_of_fresh_prompts("fill_first", _used(a=9)) == ["a", "a", "a", "a"]
    assert _accounts_of_fresh_prompts("fill_first", _resting("a")) == ["b", "b", "b", "b"]
    step = continuation(_rotating("fill_first", _fact(1, "verification_failed", account="a")))
    assert isinstance(step, Launch) and step.target.account == "a"


def test_between_attempts_also_turns_the_accounts_of_a_fallback_target_named_without_a_model() -> None:
    from awp_pipelines.core.packet.model.execution import TargetSpec

    chain = chain_of("simulated", "m", None, ["a"], [TargetSpec(provider="other", accounts=["x", "y"])],
                     "between_attempts")
    # The record names the provider's default model, where the chain names none.
    on_x = AttemptFact(number=2, mode="fallback", result="verification_failed", provider="other", account="x",
                       model="other-default")
    state = DecisionInput("01", RECOVERY, chain, (), (_fact(1, "provider_failed"), on_x), 2, last_ended=0.0,
                        last_run="run-2")
    step = continuation(state)
    assert isinstance(step, Launch) and (step.mode, step.target.provider, step.target.account) == (
        "repair", "other", "y")
