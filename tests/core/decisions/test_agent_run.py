"""agent_run.py: one AgentRun state from the stored history, and what the decision launches from it (pure)."""

from __future__ import annotations

from awp_pipelines.core.decisions.agent_run import (
    DecisionInput,
    StopMarker,
    agent_run_states,
    packet_run_state,
    resumable_prompts,
)
from awp_pipelines.core.decisions.next_launches import next_launches
from awp_pipelines.core.decisions.policy import AttemptFact, chain_of, interrupted_fact
from awp_pipelines.core.packet.model.recovery import RecoveryConfig

CHAIN = chain_of("simulated", "m", None, [], [])
RECOVERY = RecoveryConfig.model_validate({"retry": {"jitter": False}})
STOP = StopMarker(at=1_796_083_200.0, by="SIGINT", reason="Attempt pr-1.01.a1 was running")


def _fact(number: int, result: str = "completed", directive: str | None = None, reason: str = "",
          mode: str = "run") -> AttemptFact:
    return AttemptFact(number=number, mode=mode, result=result, provider="simulated", model="m",
                       directive=directive, directive_reason=reason)


def _linear(*histories: tuple[AttemptFact, ...], busy: str = "") -> list[DecisionInput]:
    """Prompts 01, 02, … each depending on the one before, with these histories."""
    ids = [f"{n:02}" for n in range(1, len(histories) + 1)]
    return [DecisionInput(pid, RECOVERY, CHAIN, (ids[i - 1],) if i else (), facts, len(facts), pid == busy, 100.0)
            for i, (pid, facts) in enumerate(zip(ids, histories, strict=True))]


def _words(states: list[DecisionInput], stopped: StopMarker | None = None) -> dict[str, str]:
    return {p: s.state for p, s in agent_run_states(states, stopped).items()}


def test_an_upstream_that_failed_holds_its_dependents_and_nothing_launches() -> None:
    failed = (_fact(1, "verifier_fault"),)
    states = _linear(failed, (), ())
    statuses = agent_run_states(states)
    assert _words(states) == {"01": "failed", "02": "planned", "03": "planned"}
    assert statuses["02"].held_by == ("01",) and statuses["02"].reason == "held: upstream 01 failed"
    assert statuses["03"].reason == "held: upstream 02 planned"
    assert next_launches(states, 200.0).idle
    assert packet_run_state(statuses) == ("failed", "ended without completing: 01")
    assert resumable_prompts(statuses) == []  # only a repair of 01 frees them


def test_blocked_ends_the_agent_run_blocked_and_holds_its_dependents() -> None:
    states = _linear((_fact(1, directive="blocked", reason="need a key", mode="iterate"),), ())
    statuses = agent_run_states(states)
    assert (statuses["01"].state, statuses["01"].reason) == ("blocked", "the agent is blocked: need a key")
    assert not statuses["01"].done  # blocked is not done: --remaining and the totals keep it
    assert statuses["02"].held_by == ("01",)
    outlook = next_launches(states, 200.0)
    assert outlook.idle and outlook.ended_status == {"01": "blocked"}
    assert packet_run_state(statuses)[0] == "blocked"


def test_an_accepted_finish_ends_the_linear_run_and_the_packet_run_completes() -> None:
    states = _linear((_fact(1, directive="finish", reason="all done", mode="iterate"),), (), ())
    statuses = agent_run_states(states)
    assert _words(states) == {"01": "completed", "02": "cancelled", "03": "cancelled"}
    assert statuses["02"].finished_by == "01" and statuses["02"].done
    assert next_launches(states, 200.0).idle  # without the finish, 02 would launch now
    assert next_launches(_linear((_fact(1),), ()), 200.0).due[0].prompt == "02"
    assert packet_run_state(statuses) == ("completed", "")


def test_a_repeat_request_is_not_done_and_iterates() -> None:
    states = _linear((_fact(1, directive="repeat", mode="iterate"),), ())
    states[0] = DecisionInput("01", RECOVERY, CHAIN, (), states[0].facts, 1, max_iterations=3)
    statuses = agent_run_states(states)
    assert (statuses["01"].state, statuses["01"].done) == ("waiting", False)
    assert [(launch.prompt, launch.mode) for launch in next_launches(states, 200.0).due] == [("01", "iterate")]


def test_an_interrupted_attempt_with_budget_left_is_resumable_not_failed() -> None:
    cut = (interrupted_fact(1, "run", chain_of("simulated", "m", None, [], []).primary),)
    states = _linear((_fact(1),), cut, ())
    statuses = agent_run_states(states)
    assert _words(states) == {"01": "completed", "02": "interrupted", "03": "planned"}
    assert statuses["02"].reason.startswith("attempt 1 was interrupted; resumable: ")
    assert packet_run_state(statuses) == ("interrupted", "resumable: 2 prompts")
    assert [launch.prompt for launch in next_launches(states, 10_000.0).due] == ["02"]  # a resume retries it


def test_a_stopped_packet_run_launches_nothing_until_resumed() -> None:
    cut = (interrupted_fact(1, "run", CHAIN.primary),)
    states = _linear((_fact(1),), cut, ())
    statuses = agent_run_states(states, STOP)
    assert _words(states, STOP) == {"01": "completed", "02": "stopped", "03": "planned"}
    assert "stopped by SIGINT (Attempt pr-1.01.a1 was running); resumable" in statuses["02"].reason
    assert next_launches(states, 10_000.0, STOP).idle
    assert packet_run_state(statuses) == ("stopped", "resumable: 2 prompts")
    fresh = _linear((_fact(1),), ())  # a prompt not started yet is stopped too, once its upstream completed
    assert _words(fresh, STOP)["02"] == "stopped" and next_launches(fresh, 200.0, STOP).idle


def test_an_upstream_outside_the_packet_run_holds_a_prompt_and_busy_prompts_are_queued_or_active() -> None:
    alone = [DecisionInput("02", RECOVERY, CHAIN, ("01",))]
    assert agent_run_states(alone)["02"].held_by == ("01",) and next_launches(alone, 0.0).idle
    assert agent_run_states(alone)["02"].reason == "held: upstream 01 not in this packet run"
    running = _linear((_fact(1),), (), busy="02")
    assert _words(running)["02"] == "queued"
    assert packet_run_state(agent_run_states(running))[0] == "running"
    assert packet_run_state({}) == ("not_started", "no prompt of the packet run has run")
