"""The live feed: an Attempt's events as short human lines for the run's log, batched and bounded."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from awp_pipelines.core.records.events import EVENT_TYPES, EventSink
from awp_pipelines.core.records.failures import FailureEnvelope
from awp_pipelines.core.records.live_lines import LINE_TYPES, LiveFeed, live_line, ticking

SECRET = "acct-credential-77aa55cc"


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def batches() -> list[list[str]]:
    return []


def feed_for(batches: list[list[str]], clock: FakeClock, **kw: int | float) -> LiveFeed:
    return LiveFeed(batches.append, clock=clock, **kw)  # type: ignore[arg-type]


def msg(text: str) -> dict[str, str]:
    return {"type": "message_received", "text": text}


def test_the_first_line_goes_out_at_once_then_at_most_one_batch_per_interval(batches, clock) -> None:
    feed = feed_for(batches, clock, interval_s=5, max_lines=20)
    feed.add(msg("first"))
    assert batches == [["agent: first"]]  # a watcher sees the agent start without waiting
    clock.now += 1
    feed.add(msg("second"))
    clock.now += 1
    feed.add({"type": "tool_call_started", "name": "Bash", "input": {"command": "ls -la"}})
    assert len(batches) == 1  # inside the interval: held back
    clock.now += 3
    feed.add({"type": "tool_call_completed", "name": "Bash", "output": "README.md\nsrc"})
    assert batches[1] == ["agent: second", "tool Bash: ls -la", "tool Bash done: README.md src"]


def test_the_first_batch_waits_first_after_s_and_a_note_joins_the_last_batch(batches, clock) -> None:
    """An Attempt that ends within `first_after_s` stores its lines and its end line as one batch (issue 17:
    each batch is a stored event)."""
    feed = feed_for(batches, clock, interval_s=5, first_after_s=1.0)
    feed.add(msg("first"))
    clock.now += 0.5
    feed.add(msg("second"))
    assert batches == []  # held back: the start marker already says the Attempt started
    feed.note("Attempt x.a1 ended completed")
    feed.flush()
    assert batches == [["agent: first", "agent: second", "Attempt x.a1 ended completed"]]
    later = feed_for(batches, clock, interval_s=5, first_after_s=1.0)
    later.add(msg("slow"))
    clock.now += 1.0
    later.poll()  # a longer Attempt: its first line goes out once the second passed
    assert batches[-1] == ["agent: slow"]


def test_poll_sends_waiting_lines_once_the_interval_passed_without_a_new_event(batches, clock) -> None:
    feed = feed_for(batches, clock, interval_s=5)
    feed.add(msg("a"))
    feed.add(msg("b"))
    feed.poll()
    assert len(batches) == 1
    clock.now += 5
    feed.poll()
    assert batches[-1] == ["agent: b"]


def test_a_burst_is_cut_into_batches_of_max_lines(batches, clock) -> None:
    feed = feed_for(batches, clock, interval_s=60, max_lines=3)
    for i in range(8):
        feed.add(msg(f"m{i}"))
    assert batches == [["agent: m0"], ["agent: m1", "agent: m2", "agent: m3"], ["agent: m4", "agent: m5", "agent: m6"]]
    feed.flush()
    assert batches[-1] == ["agent: m7"]
    assert all(len(b) <= 3 for b in batches)


def test_lines_are_single_and_cut_to_line_chars(batches, clock) -> None:
    feed = feed_for(batches, clock, line_chars=40)
    feed.add(msg("word " * 100 + "\nsecond paragraph"))
    [[line]] = batches
    assert len(line) <= 40 and "\n" not in line and line.endswith("…")


def test_an_attempt_forwards_at_most_max_total_lines_and_says_how_many_it_kept_back(batches, clock) -> None:
    feed = feed_for(batches, clock, interval_s=0, max_lines=10, max_total_lines=5)
    for i in range(12):
        feed.add(msg(f"m{i}"))
    feed.flush()
    lines = [line for b in batches for line in b]
    assert lines[:5] == [f"agent: m{i}" for i in range(5)]
    assert lines[5:] == ["[7 more lines not shown live; the transcript has them]"]


def test_past_the_cap_every_event_with_a_line_is_counted_and_no_other() -> None:
    # The cap counts by type (no line rendered): the types are exactly those live_line renders.
    assert {t for t in EVENT_TYPES if live_line({"type": t}) is not None} == LINE_TYPES
    batches: list[list[str]] = []
    feed = LiveFeed(batches.append, interval_s=0, max_total_lines=2)
    for kind in EVENT_TYPES:
        feed.add({"type": kind, "text": "x", "name": "Bash", "delta": "d", "input_tokens": 1})
    feed.add({"type": "not_a_type"})
    feed.flush()
    lines = [line for b in batches for line in b]
    shown = sum(live_line({"type": t}) is not None for t in EVENT_TYPES) + 1  # + the streamed message's line
    assert lines[-1] == f"[{shown - 2} more lines not shown live; the transcript has them]"


def test_streamed_fragments_become_one_line_when_the_message_ends(batches, clock) -> None:
    feed = feed_for(batches, clock, interval_s=0)
    for part in ("Let me ", "look at ", "the repo."):
        feed.add({"type": "message_streamed", "delta": part})
    assert batches == []
    feed.add({"type": "tool_call_started", "name": "Read", "input": {"file_path": "a.py"}})
    assert [line for b in batches for line in b] == ["agent: Let me look at the repo.", "tool Read: a.py"]


def test_a_listener_that_raises_is_dropped_and_the_attempt_goes_on(tmp_path: Path, clock) -> None:
    calls: list[list[str]] = []

    def broken(lines: list[str]) -> None:
        calls.append(lines)
        raise RuntimeError("log storage down")

    sink = EventSink(tmp_path / "e.jsonl", "a1", live=LiveFeed(broken, clock=clock))
    sink.message("one")
    sink.message("two")
    sink.close()
    assert len(calls) == 1 and [e["text"] for e in sink.events()] == ["one", "two"]


def test_event_sink_feeds_redacted_lines_and_close_sends_the_rest(tmp_path: Path, clock) -> None:
    got: list[list[str]] = []
    sink = EventSink(tmp_path / "e.jsonl", "a1", secrets=[SECRET],
                     live=LiveFeed(got.append, interval_s=5, clock=clock))
    sink.prompt_sent("# Write the greeting\n\nCreate GREETING.md.")
    sink.run_started(provider="simulated", model="m1", mode="repair")
    sink.message(f"my key is {SECRET}")
    sink.usage(input_tokens=3)  # counters are not news for a watcher
    sink.run_failed(FailureEnvelope.for_class("provider_rate_limit", "Rate limit exceeded"))
    sink.files_changed("docs", [{"path": "GREETING.md", "status": "A", "added": 3, "removed": 0}])
    sink.verifier_completed(False, ["contains GREETING.md: 'Hello' not found"])
    sink.commit_created("docs", "committed", "abc123")
    assert got == [["prompt sent (41 chars): # Write the greeting Create GREETING.md."]]
    sink.close()
    lines = [line for batch in got for line in batch]
    assert lines[1:] == [
        "agent started: simulated · m1 · repair",
        "agent: my key is [REDACTED]",
        "agent failed (provider_rate_limit): Rate limit exceeded",
        "changed docs: 1 file changed, +3 −0",
        "verifier failed: contains GREETING.md: 'Hello' not found",
        "commit docs: committed abc123",
    ]
    assert all(SECRET not in line for line in lines)


def test_a_plain_callable_is_accepted_as_the_listener(tmp_path: Path) -> None:
    got: list[list[str]] = []
    sink = EventSink(tmp_path / "e.jsonl", "a1", live=got.append)
    sink.message("hello")
    assert got == [["agent: hello"]]


def test_token_counters_and_unknown_events_make_no_line() -> None:
    assert live_line({"type": "token_usage_updated", "input_tokens": 3}) is None
    assert live_line({"type": "something_new"}) is None


def test_bad_bounds_are_refused() -> None:
    with pytest.raises(ValueError):
        LiveFeed(print, max_lines=0)


def test_ticking_sends_a_waiting_line_without_a_new_event_and_flushes_at_the_end() -> None:
    got: list[list[str]] = []
    feed = LiveFeed(got.append, interval_s=0.2)
    with ticking(feed, every_s=0.05):
        feed.add(msg("first"))  # goes at once
        feed.add(msg("second"))  # waits for the interval: no further event comes, the ticker sends it
        deadline = time.monotonic() + 5
        while len(got) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert got == [["agent: first"], ["agent: second"]]
        feed.add(msg("third"))  # still inside the interval when the block ends
    assert got[-1] == ["agent: third"]  # flushed on the way out
