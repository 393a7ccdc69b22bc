"""The SDK runs a real packet: the demo on a real git repo and the simulated provider, on the embedded
Dagster instance. Progress arrives as values (no log text is parsed), the result and `status` agree with the
stored records, and a repair by hand goes through `api.repair`."""

from __future__ import annotations

from pathlib import Path

import pytest

from awp_pipelines import api
from awp_pipelines.core.engine.progress import AttemptEnded, AttemptStarted, LaunchDecided, ProgressEvent, RunPlanned
from awp_pipelines.core.packet.errors import PacketError

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def demo(demo_copy: Path) -> Path:
    return demo_copy


def test_run_reports_progress_as_values_and_status_reads_the_same_attempts(demo: Path) -> None:
    events: list[ProgressEvent] = []
    result = api.run(demo, on_progress=events.append)
    assert result.ok and [(o.prompt, o.result) for o in result.outcomes] == [
        ("01", "completed"), ("02", "completed"), ("03", "completed")]
    assert events[0] == RunPlanned((("01", "Write the greeting"), ("02", "Write the changelog"),
                                    ("03", "Write the status report")))
    started = [(e.prompt, e.mode) for e in events if isinstance(e, AttemptStarted)]
    assert started == [("01", "run"), ("02", "run"), ("03", "run"), ("02", "repair"), ("03", "retry")]
    ended = {e.attempt: e.result for e in events if isinstance(e, AttemptEnded)}
    launches = [(e.prompt, e.number, e.mode) for e in events if isinstance(e, LaunchDecided)]
    assert launches == [("02", 2, "repair"), ("03", 2, "retry")]
    report = api.status(demo)
    assert report.packet_run == result.packet_run and report.state == "completed"
    stored = {a.attempt: a.result for p in report.prompts for a in p.attempts}
    assert stored == ended  # every Attempt the listener heard end is on record, with the same result
    assert result.total_usage.output_tokens == report.totals.tokens_out > 0


def test_repair_by_hand_completes_a_prompt_left_unmet(demo: Path) -> None:
    first = api.run(demo, ["01", "02"], recover=False)
    assert [(o.prompt, o.result) for o in first.outcomes] == [("01", "completed"), ("02", "verification_failed")]
    heard: list[ProgressEvent] = []
    repaired = api.repair(demo, "02", note="add the Unreleased section", on_progress=heard.append)
    assert repaired.ok and repaired.packet_run == first.packet_run and repaired.state == "completed"
    assert (repaired.record.identity.mode, repaired.record.identity.number) == ("repair", 2)
    assert [type(e) for e in heard] == [AttemptStarted, AttemptEnded]
    with pytest.raises(PacketError, match="no runs of packet run 'pr-00000000'"):
        api.status(demo, packet_run="pr-00000000")


def test_keep_going_runs_past_a_failed_prompt_what_does_not_depend_on_it_in_order(
        tmp_path: Path, make_git_repo) -> None:
    import yaml

    root = tmp_path / "kg"
    make_git_repo(root / "workspace")
    (root / "packet.yaml").write_text(yaml.safe_dump({
        "name": "keep-going", "provider": "simulated", "repos": {"app": {"path": "./workspace", "default": True}}}))
    (root / "prompts").mkdir()
    writes = {"attempts": [{"writes": [{"path": "{}.txt", "text": "x\n"}]}]}
    fronts = {"01": {"simulate": {"attempts": [{"error": {"kind": "guardrail_blocked"}}]}},  # fails, not retried
              "02": {}, "03": {"depends_on": ["01"]}, "04": {}}
    for pid, front in fronts.items():
        step = yaml.safe_load(yaml.safe_dump(writes).replace("{}", pid))
        body = {"commit": f"feat: {pid}", "verify": {"files_exist": [f"{pid}.txt"]}, "simulate": step, **front}
        (root / "prompts" / f"{pid}_p{pid}.prompt.md").write_text(f"---\n{yaml.safe_dump(body)}---\nWork {pid}.\n")
    events: list[ProgressEvent] = []
    result = api.run(root, keep_going=True, on_progress=events.append)
    assert not result.ok  # the packet run still ends failed
    assert [(o.prompt, o.result) for o in result.outcomes] == [
        ("01", "provider_failed"), ("02", "completed"), ("03", "blocked_by_dependency"), ("04", "completed")]
    assert [e.prompt for e in events if isinstance(e, AttemptStarted)] == ["01", "02", "04"]  # in order
    plain = api.run(root, packet_run=None)  # without it, a failure stops what comes after it (by order)
    assert [(o.prompt, o.result) for o in plain.outcomes][:2] == [("01", "provider_failed"),
                                                                  ("02", "blocked_by_dependency")]


def test_run_on_event_streams_each_attempt_its_messages_and_tokens_then_the_end(demo: Path) -> None:
    from awp_pipelines.core.engine.run_stream import AgentMessage, PacketRunEnded, RunEvent, TokensUsed

    heard: list[RunEvent] = []
    result = api.run(demo, ["01"], on_event=heard.append)
    assert result.ok
    [(attempt, started)] = [(e.attempt, i) for i, e in enumerate(heard) if isinstance(e, AttemptStarted)]
    [ended] = [i for i, e in enumerate(heard) if isinstance(e, AttemptEnded)]
    between = heard[started + 1:ended]
    assert any(isinstance(e, AgentMessage) and e.attempt == attempt for e in between)
    assert any(isinstance(e, TokensUsed) and e.tokens.output_tokens > 0 for e in between)
    assert heard[-1] == PacketRunEnded(result.packet_run, "completed")
