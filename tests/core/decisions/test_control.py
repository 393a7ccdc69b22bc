"""AgentControl's handle: exclusive requests, checked against the iteration; atomic, fenced progress."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from awp_pipelines.core.decisions.agent_control import (
    ControlError,
    Directive,
    iteration_of,
    make_request,
    open_iteration,
    read_directive,
    record_progress,
)
from awp_pipelines.core.decisions.policy import AttemptFact, chain_of, decide
from awp_pipelines.core.packet.model.control import AgentControlConfig
from awp_pipelines.core.packet.model.recovery import RecoveryConfig

CONFIG = AgentControlConfig.model_validate({"enabled": True, "completion_verify": {"files_exist": ["x"]},
                                            "max_iterations": 3})


def test_the_first_request_wins_and_a_finish_needs_a_reason(tmp_path: Path) -> None:
    handle = open_iteration(tmp_path, "pr-1", "01", 2)
    env = handle.env()
    with pytest.raises(ControlError, match="needs a reason"):
        make_request(env, "finish")
    make_request(env, "repeat", "more")
    with pytest.raises(ControlError, match="first one wins"):
        make_request(env, "continue")
    directive = read_directive(handle, CONFIG)
    assert (directive.outcome, directive.reason, directive.iteration) == ("repeat", "more", 2)
    assert env["PROMPT_RUNNER_AGENT_CONTROL_TOKEN"] == env["AWP_AGENT_CONTROL_TOKEN"] == handle.token


def test_a_request_left_from_before_is_reset_and_the_default_action_applies(tmp_path: Path) -> None:
    old = open_iteration(tmp_path, "pr-1", "01", 1)
    make_request(old.env(), "blocked", "stale")
    fresh = open_iteration(tmp_path, "pr-1", "01", 1)  # a retry or repair of the iteration: a new token
    assert fresh.token != old.token and not fresh.request_path.exists()
    directive = read_directive(fresh, CONFIG)
    assert (directive.outcome, directive.source) == ("continue", "default")


def test_a_request_with_another_token_or_a_malformed_one_is_invalid(tmp_path: Path) -> None:
    handle = open_iteration(tmp_path, "pr-1", "01", 1)
    make_request(handle.env(), "continue", token="x" * len(handle.token))
    assert read_directive(handle, CONFIG).reason == "wrong token"
    handle.request_path.write_text("{not json")
    assert read_directive(handle, CONFIG).outcome == "invalid_request"


def test_a_request_that_is_a_fifo_or_a_symlink_is_refused_without_reading_it(tmp_path: Path) -> None:
    # The agent writes these files from its sandbox; the runner reads them outside. A FIFO must not hang the
    # runner, a symlink must not make it read a file only it can read.
    secret = tmp_path / "runner-only.json"
    secret.write_text('{"cursor": "runner-only-canary-7f3a", "iteration": 1, "token": "t", "summary": "s"}')
    handle = open_iteration(tmp_path / "control", "pr-1", "01", 1)
    os.mkfifo(handle.request_path)
    handle.progress_path.symlink_to(secret)
    read: list[Directive] = []
    reader = threading.Thread(target=lambda: read.append(read_directive(handle, CONFIG)), daemon=True)
    reader.start()
    reader.join(10)
    assert read, "reading the agent's request hung on a FIFO"
    assert read[0].outcome == "invalid_request" and "runner-only-canary" not in read[0].model_dump_json()


def test_progress_is_replaced_atomically_and_a_record_of_another_iteration_is_stale(tmp_path: Path) -> None:
    handle = open_iteration(tmp_path, "pr-1", "01", 1)
    record_progress(handle.env(), "first", cursor="1/3")
    record_progress(handle.env(), "second", cursor="2/3")
    assert read_directive(handle, CONFIG).progress == "2/3 second"
    assert [p.name for p in tmp_path.iterdir()] == ["progress.json"]  # no temporary file left behind
    data = json.loads(handle.progress_path.read_text())
    handle.progress_path.write_text(json.dumps({**data, "iteration": 7}))
    # Reported as stale, not dropped: the reader sees it exists and whose it is.
    assert read_directive(handle, CONFIG).progress == "(stale: written for iteration 7) 2/3 second"
    handle.progress_path.write_text(json.dumps({**data, "token": "another-token-" + "x" * 20}))
    assert read_directive(handle, CONFIG).progress.startswith("(stale: written for iteration 1)")


def test_outside_a_session_the_command_says_so() -> None:
    with pytest.raises(ControlError, match="AWP_AGENT_CONTROL_FILE is not set"):
        make_request({}, "continue")


def test_iterations_count_iterate_attempts_and_stop_at_max_iterations() -> None:
    assert iteration_of([], "iterate") == 1
    assert iteration_of(["iterate", "iterate"], "repair") == 2  # a repair continues its iteration
    facts = [AttemptFact(number=n, mode="iterate", result="completed", provider="simulated", directive="repeat")
             for n in (1, 2, 3)]
    chain = chain_of("simulated", "m", None, [], [])
    assert decide(facts[:2], RecoveryConfig(), chain, max_iterations=3).action == "iterate"
    verdict = decide(facts, RecoveryConfig(), chain, max_iterations=3)
    assert (verdict.action, verdict.status) == ("fail", "iteration_limit")
