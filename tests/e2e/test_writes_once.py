"""Storage writes per Attempt (issue 17): each write is a transaction of its own on the instance (a SQLite
connection, a commit, and on the last connection's close a WAL checkpoint), so nothing AWP stores is stored
twice: a run's tags are not written again with the values they hold, and the Attempt's end line is stored with
the agent's last lines, not as a row of its own."""

from __future__ import annotations

from pathlib import Path

import pytest
from dagster import DagsterInstance
from e2e_support import stored_events

from awp_pipelines import api
from awp_pipelines.core.engine.progress import AttemptEnded, AttemptStarted, ProgressEvent


def test_no_run_tag_is_written_again_with_the_value_it_holds(demo_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The steps of a run of several prompts each wrote the packet-run tags again (a step sees its run's tags
    as they were at the run's start), and each Attempt the root run's `running` state again. Now a run of
    `awp run` carries its packet run from its launch, and its Attempts, commits and states are metadata: no
    run tag is written once it runs, so none is written twice."""
    real = DagsterInstance.add_run_tags
    again: list[tuple[str, dict[str, str]]] = []
    writes: list[dict[str, str]] = []

    def add_run_tags(self: DagsterInstance, run_id: str, new_tags: dict[str, str]) -> None:
        run = self.get_run_by_id(run_id)
        held = dict(run.tags) if run else {}
        writes.append(dict(new_tags))
        if all(held.get(k) == v for k, v in new_tags.items()):
            again.append((run_id, dict(new_tags)))
        real(self, run_id, new_tags)

    monkeypatch.setattr(DagsterInstance, "add_run_tags", add_run_tags)
    events: list[ProgressEvent] = []
    assert api.run(demo_copy, on_progress=events.append).ok
    assert len([e for e in events if isinstance(e, AttemptStarted)]) == 5
    assert not again, again
    assert writes == [], "a run's tags are written after its launch"


def test_an_attempt_s_end_line_is_stored_with_the_agent_s_last_lines(demo_copy: Path) -> None:
    events: list[ProgressEvent] = []
    assert api.run(demo_copy, on_progress=events.append).ok
    ended = [e.line() for e in events if isinstance(e, AttemptEnded)]
    assert len(ended) == 5
    logged = [e.user_message for e in stored_events(demo_copy) if not e.is_dagster_event]
    assert not [m for m in logged if m in ended], "an end line stored as a log row of its own"
    # Each end line is the last line of a row that also holds the agent's last lines.
    for line in ended:
        rows = [m for m in logged if m.endswith("\n" + line)]
        assert len(rows) == 1, (line, logged)
