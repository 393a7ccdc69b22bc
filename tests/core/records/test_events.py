"""Attempt events: one flushed, redacted JSON line each; counters; a readable, bounded Markdown transcript."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from awp_pipelines.core.records.events import EventSink, read_events, render_transcript
from awp_pipelines.core.records.failures import FailureEnvelope
from awp_pipelines.core.records.redact import REDACTED
from awp_pipelines.core.records.transcript import TranscriptBuilder

ACCOUNT_SECRET = "acct-credential-0f9e8d7c"


def fixed_clock() -> str:
    return "2026-01-01T00:00:00.000Z"


@pytest.fixture
def sink(tmp_path: Path) -> EventSink:
    return EventSink(tmp_path / "events" / "a1.jsonl", "pkt.01.a1", secrets=[ACCOUNT_SECRET], clock=fixed_clock)


def test_each_event_is_one_json_line_with_ts_type_attempt_and_sequence(sink: EventSink) -> None:
    sink.run_started(provider="simulated", model="m1")
    sink.message("hello")
    lines = sink.path.read_text().splitlines()
    assert [json.loads(line) for line in lines] == [
        {"ts": "2026-01-01T00:00:00.000Z", "type": "run_started", "attempt": "pkt.01.a1", "seq": 1,
         "provider": "simulated", "model": "m1"},
        {"ts": "2026-01-01T00:00:00.000Z", "type": "message_received", "attempt": "pkt.01.a1", "seq": 2,
         "text": "hello"},
    ]


def test_emit_accepts_a_mapping_and_keywords(sink: EventSink) -> None:
    event = sink.emit("resume_started", {"resume": 1}, after="transport_disconnect")
    assert event["resume"] == 1 and event["after"] == "transport_disconnect"


def test_unknown_types_and_reserved_keys_are_refused(sink: EventSink) -> None:
    with pytest.raises(ValueError, match="unknown event type"):
        sink.emit("message_recieved", text="typo")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="reserved"):
        sink.emit("message_received", attempt="other")
    assert not sink.path.exists()


def test_payloads_are_redacted_with_patterns_and_the_accounts_values(sink: EventSink) -> None:
    pattern_key = "sk-ant-" + "Q" * 24
    sink.tool_call_started("Bash", input={"command": f"echo {ACCOUNT_SECRET}", "env": {"API_KEY": "zzzzzzzz"}})
    sink.message(f"I found {pattern_key}")
    raw = sink.path.read_text()
    assert ACCOUNT_SECRET not in raw and pattern_key not in raw and "zzzzzzzz" not in raw
    events = read_events(sink.path)
    assert events[0]["input"] == {"command": f"echo {REDACTED}", "env": {"API_KEY": REDACTED}}


def test_lines_are_on_disk_before_the_process_dies(tmp_path: Path) -> None:
    path = tmp_path / "crash.jsonl"
    script = textwrap.dedent(f"""
        import os
        from awp_pipelines.core.records.events import EventSink
        sink = EventSink({str(path)!r}, "a1")
        sink.message("first")
        sink.tool_call_started("Edit", input={{"file": "x"}})
        os._exit(9)  # no cleanup, no atexit, no buffers flushed by the interpreter
    """)
    proc = subprocess.run([sys.executable, "-c", script], env={**os.environ}, capture_output=True, text=True)
    assert proc.returncode == 9, proc.stderr
    assert [e["type"] for e in read_events(path)] == ["message_received", "tool_call_started"]


def test_counters_track_messages_tool_calls_tokens_and_cost(sink: EventSink) -> None:
    sink.message("a")
    sink.delta("streamed pieces are not whole messages")
    sink.message("b")
    sink.tool_call_started("Read")
    sink.tool_call_completed("Read", output="ok")
    sink.tool_call_started("Bash")
    sink.usage(input_tokens=100, output_tokens=10, cost_usd=0.5)
    sink.usage(input_tokens=50, output_tokens=5, cost_usd=0.25)
    c = sink.counters
    assert (c.messages, c.tool_calls, c.cost_usd) == (2, 2, 0.75)
    assert (c.tokens["input_tokens"], c.tokens["output_tokens"]) == (150, 15)
    sink.usage(input_tokens=1000, output_tokens=99, cost_usd=2.0, cumulative=True)
    assert (c.tokens["input_tokens"], c.tokens["output_tokens"], c.cost_usd) == (1000, 99, 2.0)


def test_reopening_the_file_continues_counters_and_sequence_of_the_same_attempt(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    first = EventSink(path, "a1")
    first.message("one")
    first.usage(input_tokens=7)
    EventSink(path, "a2").message("other attempt")
    again = EventSink(path, "a1")
    assert again.counters.messages == 1 and again.counters.tokens["input_tokens"] == 7
    assert again.message("two")["seq"] == 3
    assert [e["text"] for e in again.events() if e["type"] == "message_received"] == ["one", "two"]


def test_read_events_skips_a_torn_last_line_but_not_corruption_in_the_middle(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    path.write_text('{"type": "run_started", "attempt": "a"}\n{"type": "message_rec')
    assert read_events(path) == [{"type": "run_started", "attempt": "a"}]
    path.write_text('{"type": "run_started"}\nnot json\n{"type": "run_completed"}\n')
    with pytest.raises(ValueError, match=":2:"):
        read_events(path)
    assert read_events(tmp_path / "missing.jsonl") == []


def test_transcript_reads_like_a_conversation_not_a_json_dump(sink: EventSink) -> None:
    sink.prompt_sent("# Write the changelog\n\n## Mission\n\nCreate `CHANGELOG.md`.\n\n## Repair Instructions\n\n"
                     "Remaining verifier failures:\n\n- contains CHANGELOG.md: '## Unreleased' [contains]")
    sink.run_started(provider="claude_code", model="sonnet", account="team-a")
    sink.delta("Let me look ")
    sink.delta("at the repo.")
    sink.tool_call_started("Bash", input={"command": "ls -la"})
    sink.tool_call_completed("Bash", output="README.md\nsrc")
    sink.tool_call_started("Grep", input={"glob": "*.py", "n": 3})
    sink.tool_call_failed("Edit", error="permission denied\nsecond line")
    sink.file_written("docs/a.md", repo="app")
    sink.message("I wrote **docs/a.md**.")
    sink.usage(input_tokens=1200, output_tokens=300, cost_usd=0.0123)
    sink.run_failed(FailureEnvelope.for_class("transport_disconnect", "connection reset by peer"))
    sink.emit("resume_started", {"resume": 1, "after": "transport_disconnect"})
    sink.message("Continuing.")
    sink.run_completed()
    sink.files_changed("app", [{"path": "docs/a.md", "status": "A", "added": 12, "removed": 0},
                               {"path": "logo.png", "status": "M", "added": None, "removed": None}])
    sink.verifier_completed(False, ["contains docs/a.md: 'Usage' not found"])
    sink.commit_created("app", "committed", "abc123")
    md = sink.transcript_markdown()
    assert md.startswith("### Attempt pkt.01.a1\n")
    assert not [line for line in md.splitlines() if line.startswith(("# ", "## "))]  # small headings only
    assert [line for line in md.splitlines() if line.startswith("#### ")] == [
        "#### Prompt", "#### Agent", "#### Resume", "#### Files changed", "#### Verification", "#### Commit"]
    # The prompt as sent, its own headings demoted to bold, the repair's unmet item included.
    assert ("> **Write the changelog**\n>\n> **Mission**\n>\n> Create `CHANGELOG.md`.\n>\n"
            "> **Repair Instructions**") in md
    assert "> - contains CHANGELOG.md: '## Unreleased' [contains]" in md
    assert "Let me look at the repo." in md
    assert ("- tool `Bash`: ls -la\n"  # the salient input on one line, a tight list of tool bullets
            "- tool `Bash` done: README.md src\n"
            "- tool `Grep`: glob: *.py, n: 3\n"
            "- tool `Edit` failed:\n"
            "  > permission denied\n"
            "  > second line\n"
            "- wrote `app:docs/a.md`\n\n"
            "I wrote **docs/a.md**.") in md
    assert "**Run failed** (transport_disconnect):\n\n> connection reset by peer" in md
    assert "_resumed after transport_disconnect with “Continue”_" in md
    assert ("- `app`: 2 files changed, +12 −0\n  - `docs/a.md` (new) +12 −0\n  - `logo.png` binary") in md
    assert "- contains docs/a.md: 'Usage' not found" in md
    assert "- `app`: committed `abc123`" in md
    assert "messages: 2 · tool calls: 2 · tokens in/out: 1200/300 · cost: $0.0123" in md
    assert '{"' not in md and '"type"' not in md
    order = [md.index(s) for s in ("#### Prompt", "Let me look", "#### Files changed", "#### Verification",
                                    "#### Commit", "messages: 2")]
    assert order == sorted(order)


def test_transcript_names_the_jsonl_relative_to_the_packet_never_absolute(tmp_path: Path) -> None:
    packet = tmp_path / "packet"
    path = packet / ".awp" / "events" / "pr-1" / "02" / "pr-1.02.a1.jsonl"
    with_root = EventSink(path, "pr-1.02.a1", root=packet)
    with_root.message("hi")
    assert "`.awp/events/pr-1/02/pr-1.02.a1.jsonl`" in with_root.transcript_markdown()
    # Without a root (or with a state folder elsewhere) the state layout names it, still not this machine's path.
    assert EventSink(path, "pr-1.02.a1").source_name() == ".awp/events/pr-1/02/pr-1.02.a1.jsonl"
    elsewhere = EventSink(tmp_path / "state" / "events" / "r" / "01" / "x.jsonl", "x", root=packet)
    assert elsewhere.source_name() == "events/r/01/x.jsonl"
    assert str(tmp_path) not in with_root.transcript_markdown()


def test_a_long_repair_prompt_keeps_its_unmet_items_at_the_end(sink: EventSink) -> None:
    body = "\n".join(f"context line {i} " + "y" * 80 for i in range(400))
    sink.prompt_sent(body + "\n\n## Repair Instructions\n\n- contains STATUS.md: 'status: green' [contains]")
    md = sink.transcript_markdown()
    assert len(md) < 20_000
    assert "context line 0 " in md and "context line 399 " in md and "context line 200 " not in md
    assert "characters of the prompt not shown" in md
    assert "> - contains STATUS.md: 'status: green' [contains]" in md


def test_transcript_is_capped_with_a_note_and_keeps_its_footer(sink: EventSink) -> None:
    for i in range(200):
        sink.message(f"message {i} " + "x" * 500)
    md = sink.transcript_markdown(max_chars=5000)
    assert len(md) <= 5000
    assert "_[transcript truncated:" in md and "`events/a1.jsonl`" in md and str(sink.path) not in md
    assert md.rstrip().endswith("`events/a1.jsonl`")
    assert "cost: $0.0000" in md
    assert "message 0 " in md and "message 199 " not in md
    # 35 characters of headings, then 512 a message: the 10th took the body past 5000, the 190 after it are
    # counted (footer, note) but not rendered.
    assert "190 more events not rendered" in md


def test_render_transcript_from_stored_events_alone(tmp_path: Path) -> None:
    events = [{"type": "message_received", "text": "stored"}, {"type": "run_completed"}]
    md = render_transcript(events, title="From disk")
    assert md.startswith("### From disk\n\n#### Agent\n\nstored\n\n**Run completed.**")


def test_prompt_and_files_changed_are_redacted_like_every_event(sink: EventSink) -> None:
    sink.prompt_sent(f"use the key {ACCOUNT_SECRET} please")
    sink.files_changed("app", [{"path": f"notes-{ACCOUNT_SECRET}.md", "added": 1, "removed": 0}])
    raw = sink.path.read_text()
    assert ACCOUNT_SECRET not in raw and ACCOUNT_SECRET not in sink.transcript_markdown()


def test_files_changed_since_the_checkpoint_reads_each_target_repo(tmp_path: Path, make_git_repo) -> None:
    docs = make_git_repo(tmp_path / "docs")
    app = make_git_repo(tmp_path / "app")
    checkpoint = {"docs": _head(docs), "app": _head(app)}
    (docs / "CHANGELOG.md").write_text("# Changelog\n\n## Unreleased\n")
    sink = EventSink(tmp_path / "e.jsonl", "a1")
    sink.files_changed_since({"docs": docs, "app": app, "gone": tmp_path / "missing"}, checkpoint)
    [first, second] = [e for e in sink.events() if e["type"] == "files_changed"]
    assert (first["repo"], first["base"], first["files"]) == (
        "docs", checkpoint["docs"], [{"path": "CHANGELOG.md", "status": "A", "added": 3, "removed": 0}])
    assert (second["repo"], second["files"]) == ("app", [])  # a repo left alone says so; a broken one is skipped
    md = sink.transcript_markdown()
    assert "- `docs`: 1 file changed, +3 −0\n  - `CHANGELOG.md` (new) +3 −0\n- `app`: no changes" in md


def _head(repo: Path) -> str:
    return subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()


def test_a_huge_change_is_summed_in_full_but_stored_and_shown_capped(sink: EventSink) -> None:
    files = [{"path": f"gen/f{i:05d}.txt", "status": "A", "added": 2, "removed": 0} for i in range(2000)]
    event = sink.files_changed("app", files)
    assert (event["total_files"], event["added"], len(event["files"])) == (2000, 4000, 500)
    md = sink.transcript_markdown()
    assert "- `app`: 2000 files changed, +4000 −0" in md and "… and 1980 more" in md
    assert "gen/f00019.txt" in md and "gen/f00020.txt" not in md


# -- the transcript built as the events go out -----------------------------------------------------------
_KINDS = ["prompt_sent", "run_started", "message_received", "thinking", "message_streamed", "tool_call_started",
          "tool_call_completed", "tool_call_failed", "file_written", "files_changed", "rate_limit_notice",
          "token_usage_updated", "run_failed", "verifier_completed", "commit_created", "resume_started",
          "run_completed", "error_occurred"]


def _random_events(seed: int) -> list[tuple[str, dict[str, object]]]:
    """Event types in any order (bullets next to each other or not, phases, streams), texts short and long."""
    rng = random.Random(seed)
    events = []
    for _ in range(rng.randint(0, 80)):
        text = " ".join(rng.choice(["a", "bb", "ccc\n", "  ", "y" * rng.randint(1, 400), ACCOUNT_SECRET])
                        for _ in range(rng.randint(0, 8)))
        fields: dict[str, object] = {
            "text": text, "delta": text, "name": "Bash", "input": {"command": text, "n": (1, 2)}, "output": [text],
            "error": text, "path": "p", "repo": "r", "message": text, "passed": rng.random() < 0.5,
            "failures": [text], "input_tokens": rng.randint(0, 9), "cost_usd": 0.5, "status": "allowed",
            "files": [{"path": "f", "status": "A", "added": 1, "removed": 0}] if rng.random() < 0.5 else []}
        events.append((rng.choice(_KINDS), fields))
    return events


def test_the_transcript_built_as_events_go_out_is_the_one_rendered_from_the_jsonl(tmp_path: Path) -> None:
    for seed in range(60):
        sink = EventSink(tmp_path / f"e{seed}.jsonl", "pkt.01.a1", secrets=[ACCOUNT_SECRET], clock=fixed_clock)
        for kind, fields in _random_events(seed):
            sink.emit(kind, fields)  # type: ignore[arg-type]
        stored = read_events(sink.path)
        for cap in (400, 2_000, 16_000, 200_000):
            expected = render_transcript(stored, "Attempt pkt.01.a1", cap, sink.source_name())
            assert sink.transcript_markdown(cap) == expected, (seed, cap)
            assert ACCOUNT_SECRET not in expected


def test_the_transcript_is_not_read_back_from_the_jsonl(sink: EventSink, monkeypatch: pytest.MonkeyPatch) -> None:
    sink.message("kept as written")
    monkeypatch.setattr(EventSink, "iter_events", lambda self: pytest.fail("the JSONL was read back"))
    assert "kept as written" in sink.transcript_markdown()


def test_events_another_writer_appended_or_a_longer_transcript_come_from_the_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "a1.jsonl"
    first = EventSink(path, "a1")
    first.message("from the first writer")
    second = EventSink(path, "a1")  # reads what the first wrote
    second.message("from the second writer")
    first.message("the first again")
    for sink in (first, second):
        md = sink.transcript_markdown()
        assert "from the first writer" in md and "from the second writer" in md and "the first again" in md
    assert "from the second writer" in first.transcript_markdown(max_chars=500_000)


def test_a_builder_answers_any_smaller_cap_as_a_builder_kept_to_it(tmp_path: Path) -> None:
    for seed in range(200):
        events = [{"type": kind, **fields} for kind, fields in _random_events(seed)]
        builder = TranscriptBuilder("T", 20_000)
        for event in events:
            builder.add(event)
        for cap in (300, 1_000, 5_000, 20_000):
            assert builder.markdown(cap, "src") == render_transcript(events, "T", cap, "src"), (seed, cap)
    with pytest.raises(ValueError):
        builder.markdown(20_001)
