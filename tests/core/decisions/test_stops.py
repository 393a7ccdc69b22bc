"""A user's stop of a packet run (stops.py): it stands until a resume, a stop older than the resume is history,
and the stop message says exactly what the stop ended."""

from __future__ import annotations

import signal

from awp_pipelines.core.decisions.stops import StopMarker, StopState
from awp_pipelines.core.engine.attempt_record import AttemptIdentity, AttemptRecord, AttemptTarget
from awp_pipelines.core.records.failures import FailureEnvelope
from awp_pipelines.orchestration.driver.in_process import stop_message


def test_a_stop_stands_until_a_resume_and_a_cancel_seen_after_the_resume_is_history() -> None:
    stopped = StopState().stop(StopMarker.from_signal(signal.SIGINT, 100.0, "awp run was stopped"))
    assert stopped.stopped and stopped.marker is not None and stopped.marker.by == "SIGINT"
    resumed = stopped.resume(200.0)
    assert not resumed.stopped
    # The sensor sees a run cancelled at 150 only after the user resumed at 200: no stop.
    assert not resumed.stop(StopMarker(150.0, "ui_cancel", "run x was cancelled")).stopped
    again = resumed.stop(StopMarker(250.0, "ui_cancel", "run y was cancelled"))
    assert again.stopped and again.marker == StopMarker(250.0, "ui_cancel", "run y was cancelled")


def test_the_first_stop_of_a_stretch_is_kept() -> None:
    first = StopMarker.from_signal(signal.SIGTERM, 10.0, "awp run was stopped")
    state = StopState().stop(first).stop(StopMarker(11.0, "ui_cancel", "an echo"))
    assert state.marker == first and first.by == "SIGTERM"


def test_the_stored_form_reads_back_and_garbage_reads_as_no_stop() -> None:
    state = StopState(StopMarker(1.5, "ui_cancel", "run abc was cancelled"), 0.5)
    assert StopState.parse(state.dump()) == state
    assert StopState.parse(StopState().resume(3.0).dump()) == StopState(None, 3.0)
    for garbage in (None, "", "{", "[]", '{"marker": {"at": "x"}}', '{"marker": 3}'):
        assert StopState.parse(garbage) == StopState()


def _interrupted(wip: dict[str, str]) -> AttemptRecord:
    return AttemptRecord(
        identity=AttemptIdentity(attempt_id="pr-1.01.a1", agent_run="pr-1.01", number=1, packet="p",
                                 packet_run="pr-1", prompt="01", mode="run"),
        target=AttemptTarget(provider="simulated", provider_kind="simulated", model="m",
                             reason="primary target of the plan"),
        role="coder", prompt_name="First", workspace={"app": "/w"}, cwd="/w", checkpoint={"app": "abc"},
        started_at="2026-11-30T00:00:00+00:00", ended_at="2026-11-30T00:00:01+00:00", duration_s=1.0,
        result="provider_failed", wip=wip,
        failure=FailureEnvelope.for_class("interrupted", "stopped by SIGINT"))


def test_the_stop_message_claims_a_record_and_a_checkpoint_only_when_there_are_some() -> None:
    none = stop_message("pr-1", "SIGINT", [])
    assert "no Attempt was running" in none and "recorded" not in none and "checkpoint" not in none
    assert "--packet-run pr-1" in none
    saved = stop_message("pr-1", "SIGTERM", [_interrupted({"app": "abc"})])
    assert "Attempt pr-1.01.a1 was running: recorded provider_failed, its partial work checkpointed (app)" in saved
    clean = stop_message("pr-1", "SIGTERM", [_interrupted({})])
    assert "recorded provider_failed, it had changed nothing" in clean and "checkpointed" not in clean
    assert "not known" in stop_message("pr-1", "SIGINT", None)
