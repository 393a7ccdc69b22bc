"""Every AgentRun has an id of its own: a prompt edited while its AgentRun was unfinished starts a new one
(core/decisions/intent.py) whose id, derived from the stored history alone, differs from the superseded one's."""

from __future__ import annotations

from awp_pipelines.core.decisions.policy import Target
from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.orchestration.ledger.history import AgentRunHistory, PacketRunHistory

SIM = Target("sim", None, None)


def _history(intents: dict[int, str]) -> AgentRunHistory:
    return AgentRunHistory(started={n: (f"run{n}", "run", SIM) for n in intents}, intents=dict(intents))


def test_the_first_agent_run_keeps_the_plain_id_and_each_later_one_has_a_suffix() -> None:
    assert tags.agent_run_id("pr-1", "02") == "pr-1.02"
    assert tags.agent_run_id("pr-1", "02", 2) == "pr-1.02.r2" != tags.agent_run_id("pr-1", "02")
    assert tags.attempt_id(tags.agent_run_id("pr-1", "02", 3), 5) == "pr-1.02.r3.a5"


def test_each_change_of_the_stored_definition_between_attempts_starts_the_next_generation() -> None:
    history = _history({1: "A", 2: "A", 3: "B", 4: "B", 5: "A"})
    assert [history.generation(n) for n in range(1, 6)] == [1, 1, 2, 2, 3]
    # The next Attempt: under the same definition it stays in the last AgentRun; under another, a new one.
    assert history.generation(6, "A") == 3 and history.generation(6, "C") == 4


def test_an_attempt_with_no_stored_definition_continues_its_predecessor() -> None:
    """Attempts stored before definitions were (no intent) never start a generation of their own."""
    history = AgentRunHistory(started={1: ("r1", "run", SIM), 2: ("r2", "retry", SIM), 3: ("r3", "run", SIM)},
                              intents={2: "A", 3: "B"})
    assert [history.generation(n) for n in (1, 2, 3)] == [1, 1, 2]


def test_the_packet_run_history_names_the_attempts_of_a_superseded_agent_run_and_its_successor_apart() -> None:
    whole = _history({1: "A", 2: "B"})
    history = PacketRunHistory("pr-1", [], {"02": whole}, {})
    assert history.attempt_of("02", 1) == "pr-1.02.a1"
    assert history.attempt_of("02", 2) == "pr-1.02.r2.a2"
    assert history.agent_run_of("02", 3, "B") == "pr-1.02.r2" and history.agent_run_of("02", 3, "C") == "pr-1.02.r3"
    # The status table's rows: an Attempt without a record (its run not ended) is named in its own AgentRun.
    rows = whole.summaries(tags.agent_run_id("pr-1", "02"), finished_runs={"run1"})
    assert [(r.attempt, r.result) for r in rows] == [("pr-1.02.a1", "interrupted"), ("pr-1.02.r2.a2", "running")]
