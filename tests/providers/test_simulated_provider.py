"""The simulated provider plays a prompt's `simulate:` script into real repos, deterministically."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from awp_pipelines.core.packet.model.simulate import SimulatedStep, SimulatedTool, SimulateSpec
from awp_pipelines.core.providers import ProviderAdapter, ProviderOutcome, ProviderRequest, SimulatedProvider
from awp_pipelines.core.records.events import EventSink, read_events
from awp_pipelines.core.records.failures import FailureEnvelope
from awp_pipelines.core.records.workspace import changed_paths

MakeRepo = Callable[[Path], Path]

SCRIPT = SimulateSpec.model_validate({
    "attempts": [
        {"messages": ["Reading the task.", "Writing the docs."],
         "writes": [{"path": "docs/guide.md", "text": "# Guide\n"},
                    {"path": "docs/guide.md", "text": "More.\n", "append": True},
                    {"repo": "lib", "path": "lib.txt", "text": "lib\n"}]},
        {"messages": ["Trying again."],
         "writes": [{"path": "partial.txt", "text": "half"}],
         "error": {"kind": "provider_rate_limit", "message": "429 Too Many Requests"}},
    ],
    "resume": {"messages": ["Resumed where I stopped."], "writes": [{"path": "resumed.txt", "text": "r"}]},
})


def clock() -> str:
    return "T"


@pytest.fixture
def repos(make_git_repo: MakeRepo, tmp_path: Path) -> dict[str, Path]:
    return {"app": make_git_repo(tmp_path / "app"), "lib": make_git_repo(tmp_path / "lib")}


def request_for(repos: dict[str, Path], simulate: SimulateSpec | None = SCRIPT, **overrides: Any) -> ProviderRequest:
    fields: dict[str, Any] = {"prompt_text": "Write the guide please", "cwd": repos["app"], "repos": repos,
                              "default_repo": "app", "timeout_ms": 60_000, "simulate": simulate}
    return ProviderRequest(**{**fields, **overrides})


def new_sink(tmp_path: Path, name: str = "events.jsonl") -> EventSink:
    return EventSink(tmp_path / name, "att-1", clock=clock)


def test_it_is_a_provider_adapter() -> None:
    assert isinstance(SimulatedProvider(), ProviderAdapter)


def test_attempt_one_plays_the_first_step_messages_and_writes(repos: dict[str, Path], tmp_path: Path) -> None:
    sink = new_sink(tmp_path)
    outcome = SimulatedProvider().run(request_for(repos), sink)
    assert outcome.ok and outcome.failure is None
    assert outcome.session_id == "sim-1" and outcome.messages == 2
    assert outcome.changed_files == ["app:docs/guide.md", "lib:lib.txt"]
    assert (repos["app"] / "docs" / "guide.md").read_text() == "# Guide\nMore.\n"  # replace, then append
    assert changed_paths(repos["app"]) == ["docs/guide.md"] and changed_paths(repos["lib"]) == ["lib.txt"]
    events = read_events(sink.path)
    # Each write is a tool call, as a real agent's: Write for a new file, Edit for one that is there.
    write = ["tool_call_started", "tool_call_completed", "file_written"]
    assert [e["type"] for e in events] == ["run_started", "message_received", "message_received",
                                           "token_usage_updated", *write * 3, "run_completed"]
    assert [e["name"] for e in events if e["type"] == "tool_call_started"] == ["Write", "Edit", "Write"]
    assert [e["text"] for e in events if e["type"] == "message_received"] == SCRIPT.attempts[0].messages
    assert outcome.usage.input_tokens == 4 and outcome.usage.output_tokens == 6


def test_a_later_attempt_plays_its_own_step_and_ends_with_the_scripted_failure(
        repos: dict[str, Path], tmp_path: Path) -> None:
    sink = new_sink(tmp_path)
    outcome = SimulatedProvider().run(request_for(repos, attempt_number=2, mode="retry"), sink)
    assert not outcome.ok and outcome.session_id == "sim-2"
    assert outcome.failure == FailureEnvelope.for_class("provider_rate_limit", "429 Too Many Requests",
                                                        provider_code="provider_rate_limit")
    assert (repos["app"] / "partial.txt").read_text() == "half"  # side effects land before the failure
    assert read_events(sink.path)[-1]["type"] == "run_failed"
    assert not (repos["app"] / "docs").exists()  # attempt 1's step was not replayed


def test_an_attempt_past_the_script_does_nothing_and_ends_ok(repos: dict[str, Path], tmp_path: Path) -> None:
    sink = new_sink(tmp_path)
    outcome = SimulatedProvider().run(request_for(repos, attempt_number=3), sink)
    assert outcome.ok and outcome.changed_files == [] and outcome.messages == 1
    assert "no scripted step for attempt 3 (the script has 2)" in sink.events()[1]["text"]
    assert changed_paths(repos["app"]) == []


def test_no_script_at_all_behaves_like_an_empty_one(repos: dict[str, Path], tmp_path: Path) -> None:
    outcome = SimulatedProvider().run(request_for(repos, simulate=None), new_sink(tmp_path))
    assert outcome.ok and outcome.changed_files == []


def test_without_named_repos_writes_land_in_the_working_directory(tmp_path: Path) -> None:
    cwd = tmp_path / "work"
    cwd.mkdir()
    spec = SimulateSpec.model_validate({"attempts": [{"writes": [{"path": "a/b.txt", "text": "x"}]}]})
    request = ProviderRequest(prompt_text="p", cwd=cwd, timeout_ms=1000, simulate=spec)
    outcome = SimulatedProvider().run(request, new_sink(tmp_path))
    assert outcome.ok and outcome.changed_files == ["a/b.txt"]
    assert (cwd / "a" / "b.txt").read_text() == "x"


@pytest.mark.parametrize("write, why", [
    ({"path": "../outside.txt", "text": "x"}, "outside app"),
    ({"path": "{tmp}/absolute.txt", "text": "x"}, "outside app"),
    ({"path": "link/escaped.txt", "text": "x"}, "outside app"),
    ({"repo": "nope", "path": "x.txt", "text": "x"}, "unknown repo 'nope'"),
])
def test_writes_that_escape_their_repo_are_refused_as_a_guardrail(
        repos: dict[str, Path], tmp_path: Path, write: dict[str, Any], why: str) -> None:
    (repos["app"] / "link").symlink_to(tmp_path, target_is_directory=True)
    write = {**write, "path": write["path"].replace("{tmp}", str(tmp_path))}
    spec = SimulateSpec.model_validate({"attempts": [
        {"writes": [{"path": "first.txt", "text": "1"}, write, {"path": "never.txt", "text": "n"}]}]})
    outcome = SimulatedProvider().run(request_for(repos, simulate=spec), new_sink(tmp_path))
    assert not outcome.ok and outcome.failure is not None
    assert outcome.failure.failure_class == "guardrail_blocked" and not outcome.failure.retryable
    assert why in outcome.failure.message
    assert outcome.changed_files == ["app:first.txt"]
    assert not (repos["app"] / "never.txt").exists()
    assert not (tmp_path / "outside.txt").exists() and not (tmp_path / "escaped.txt").exists()
    assert not (tmp_path / "absolute.txt").exists()


def test_resume_plays_the_resume_step_in_the_same_session(repos: dict[str, Path], tmp_path: Path) -> None:
    sink = new_sink(tmp_path)
    outcome = SimulatedProvider().resume(request_for(repos, session_id="sim-1", mode="resume"), sink)
    assert outcome.ok and outcome.session_id == "sim-1"
    assert outcome.changed_files == ["app:resumed.txt"]
    assert sink.events()[0] == {"ts": "T", "type": "message_received", "attempt": "att-1", "seq": 1,
                                "text": "Resumed where I stopped."}


def test_resume_without_a_resume_step_is_a_resumeable_transport_failure(
        repos: dict[str, Path], tmp_path: Path) -> None:
    spec = SimulateSpec.model_validate({"attempts": [{"error": {"kind": "transport_disconnect"}}]})
    outcome = SimulatedProvider().resume(request_for(repos, simulate=spec, session_id="sim-1"), new_sink(tmp_path))
    assert not outcome.ok and outcome.failure is not None
    assert outcome.failure.failure_class == "transport_disconnect" and outcome.failure.resumeable
    assert "no resume step" in outcome.failure.message


def test_playing_the_same_script_twice_gives_identical_events_and_files(
        make_git_repo: MakeRepo, tmp_path: Path) -> None:
    runs = []
    for name in ("one", "two"):
        repos = {"app": make_git_repo(tmp_path / name / "app"), "lib": make_git_repo(tmp_path / name / "lib")}
        sink = new_sink(tmp_path / name)
        outcome = SimulatedProvider().run(request_for(repos), sink)
        runs.append((sink.path.read_text(), outcome, (repos["app"] / "docs" / "guide.md").read_text()))
    assert runs[0] == runs[1]


def test_a_request_is_validated_when_built(repos: dict[str, Path]) -> None:
    with pytest.raises(ValueError, match="1-based"):
        request_for(repos, attempt_number=0)
    with pytest.raises(ValueError, match="default_repo"):
        request_for(repos, default_repo="missing")
    with pytest.raises(ValueError, match="timeout_ms"):
        request_for(repos, timeout_ms=0)


def test_an_outcome_has_a_failure_exactly_when_it_is_not_ok() -> None:
    failure = FailureEnvelope.for_class("unknown", "x")
    with pytest.raises(ValidationError):
        ProviderOutcome(ok=True, failure=failure)
    with pytest.raises(ValidationError):
        ProviderOutcome(ok=False)
    assert ProviderOutcome(ok=False, failure=failure).failure == failure


def test_a_step_s_tool_calls_come_before_its_writes_each_started_and_completed(repos: dict[str, Path],
                                                                              tmp_path: Path) -> None:
    step = SimulatedStep(messages=["looking"], tools=[SimulatedTool(name="Bash", input={"command": "ls"},
                                                                    output="README.md")])
    request = request_for(repos, SimulateSpec(attempts=[step]))
    sink = new_sink(tmp_path)
    assert SimulatedProvider().run(request, sink).ok
    calls = [(e["type"], e["name"], e.get("input") or e.get("output")) for e in read_events(sink.path)
             if e["type"].startswith("tool_call")]
    assert calls == [("tool_call_started", "Bash", {"command": "ls"}), ("tool_call_completed", "Bash", "README.md")]
