"""Live activity while an Attempt runs: its events as short human lines, handed to a listener in batches.

The Dagster layer forwards each batch to `context.log`, where every call is a stored event: so lines are
batched (at most one batch per `interval_s`, unless `max_lines` are waiting), each line is cut to
`line_chars`, and an Attempt forwards at most `max_total_lines` in all (the transcript has the rest).
The first line after a quiet spell goes out at once, so a user watching the run sees the agent start;
`first_after_s` holds the very first batch back that long (an Attempt that ends sooner stores one batch).
Pure: the clock is injected, no Dagster. Events arrive already redacted (EventSink writes first). `ticking`
polls from a daemon thread so a waiting line never waits for the agent's next event longer than the interval.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from awp_pipelines.core.records.plural import counted
from awp_pipelines.core.records.transcript import files_summary, one_line

LiveListener = Callable[[list[str]], None]
"""Receives one batch: 1..max_lines lines, each a single line of at most line_chars characters."""

# The event types `live_line` gives a line for (never an empty one); tests/core/records/test_live.py checks it against
# every event type. Past an Attempt's `max_total_lines`, these are counted without rendering a line.
LINE_TYPES = frozenset({"prompt_sent", "run_started", "message_received", "tool_call_started",
                        "tool_call_completed", "tool_call_failed", "file_written", "files_changed",
                        "resume_started", "steer_received", "run_completed", "run_failed", "error_occurred",
                        "run_cancelled", "verifier_completed", "tree_set_aside", "commit_created", "network_denied",
                        "config_discarded"})


def live_line(event: Mapping[str, Any], limit: int = 300) -> str | None:
    """One plain line for an event; None for what a watcher does not need (token counters, deltas)."""
    kind = event.get("type")
    name = one_line(event.get("name"), 60) or "tool"
    text: str | None
    if kind == "prompt_sent":
        text = f"prompt sent ({len(str(event.get('text') or ''))} chars): {one_line(event.get('text'), limit)}"
    elif kind == "run_started":
        text = "agent started: " + " · ".join(one_line(event[k], 60) for k in ("provider", "account", "model", "mode")
                                              if event.get(k))
    elif kind == "message_received":
        text = f"agent: {one_line(event.get('text'), limit)}"
    elif kind == "tool_call_started":
        text = _labelled(f"tool {name}", event.get("input"), limit)
    elif kind == "tool_call_completed":
        text = _labelled(f"tool {name} done", event.get("output"), limit)
    elif kind == "tool_call_failed":
        text = f"tool {name} failed: {one_line(event.get('error'), limit)}"
    elif kind == "file_written":
        repo = event.get("repo")
        text = f"wrote {(str(repo) + ':') if repo else ''}{event.get('path')}"
    elif kind == "files_changed":
        text = "changed " + files_summary(event)[0]
    elif kind == "resume_started":
        text = f"resuming session {event.get('session_id') or '?'}"
    elif kind == "steer_received":
        text = f"steer from {event.get('author') or '?'}: {one_line(event.get('text'), limit)}"
    elif kind == "run_completed":
        text = "agent finished"
    elif kind in ("run_failed", "error_occurred", "run_cancelled"):
        label = {"run_failed": "agent failed", "error_occurred": "error", "run_cancelled": "cancelled"}[kind]
        cls = event.get("failure_class")
        text = f"{label}{f' ({cls})' if cls else ''}: {one_line(event.get('message') or event.get('error'), limit)}"
    elif kind == "verifier_completed":
        failures = "; ".join(str(f) for f in event.get("failures") or [])
        text = "verifier passed" if event.get("passed") else f"verifier failed: {failures}"
    elif kind == "tree_set_aside":
        text = f"set aside the changes found in {event.get('repo')} as git stash {event.get('sha')}"
    elif kind == "network_denied":
        count = event.get("count") or 1
        times = f" {count} times" if count > 1 else ""
        text = (f"network: refused {event.get('method')} {event.get('host')}:{event.get('port')}{times} "
                f"({event.get('reason')})")
    elif kind == "config_discarded":
        changed = ", ".join(event.get("changed") or [])
        text = f"config: discarded what the agent wrote in {event.get('folder')}: {changed}"
    elif kind == "commit_created":
        text = f"commit {event.get('repo')}: {event.get('status')} {event.get('sha') or ''}".rstrip()
    else:
        return None
    return one_line(text, limit)


def _labelled(label: str, detail: Any, limit: int) -> str:
    text = one_line(detail, limit)
    return f"{label}: {text}" if text else label


class LiveFeed:
    """Batches `live_line`s of the events it is given and calls `listener` with each batch.

    Call `add(event)` per event (EventSink does), `poll()` from a timer if lines must not wait for the next
    event, and `flush()` once when the Attempt ends. A listener that raises is dropped, never the Attempt:
    activity is observable, not lifecycle state.
    """

    def __init__(self, listener: LiveListener, interval_s: float = 5.0, max_lines: int = 20,
                 line_chars: int = 300, max_total_lines: int = 1000,
                 clock: Callable[[], float] = time.monotonic, first_after_s: float = 0.0) -> None:
        if interval_s < 0 or max_lines < 1 or line_chars < 20 or max_total_lines < 1:
            raise ValueError("interval_s >= 0, max_lines >= 1, line_chars >= 20, max_total_lines >= 1")
        self.listener: LiveListener | None = listener
        self.interval_s, self.max_lines = interval_s, max_lines
        self.line_chars, self.max_total_lines = line_chars, max_total_lines
        self._clock = clock
        self._pending: list[str] = []
        self._stream: list[str] = []  # streamed fragments, one line once the message ends
        self._accepted = 0
        self._dropped = 0
        self._last_sent: float | None = None
        self._first_at = clock() + first_after_s  # the first batch is due from then on
        # add() runs on the Attempt's thread, poll() may run on a ticker's: one batch at a time, in order.
        self._lock = threading.RLock()

    def add(self, event: Mapping[str, Any]) -> None:
        if self._accepted >= self.max_total_lines and not self._stream and self.listener is not None:
            kind = event.get("type")
            if kind != "message_streamed":  # past the cap, nothing streaming: what _add would do, in short
                # No lock: only the Attempt's thread (add, flush) changes these counts; poll() takes it.
                self._dropped += kind in LINE_TYPES
                if self._pending and (self._last_sent is None or self._clock() - self._last_sent >= self.interval_s):
                    self.poll()  # only a due batch can go: no line is added past the cap
                return
        with self._lock:
            self._add(event)

    def _add(self, event: Mapping[str, Any]) -> None:
        if self.listener is None:
            return
        if event.get("type") == "message_streamed":
            self._stream.append(str(event.get("delta") or ""))
            if sum(len(s) for s in self._stream) < self.line_chars:
                return
        self._end_stream()
        if self._accepted >= self.max_total_lines:
            # Nothing more goes out live (a long stream is past it after its first minutes): count only.
            self._dropped += event.get("type") in LINE_TYPES
        else:
            line = live_line(event, self.line_chars)
            if line:
                self._accept(line)
        self.poll()

    def poll(self) -> None:
        """Send waiting lines when a batch is due: `max_lines` waiting, or `interval_s` since the last batch."""
        with self._lock:
            if not self._pending or self.listener is None:
                return
            now = self._clock()
            due = now >= self._first_at if self._last_sent is None else now - self._last_sent >= self.interval_s
            if due or len(self._pending) >= self.max_lines:
                self._send(now)

    def note(self, line: str) -> None:
        """A line of the caller's own (the Attempt's end), sent with the next batch: at the end, the last
        agent lines and it are one stored event, not two. Not counted against `max_total_lines`."""
        with self._lock:
            if self.listener is not None:
                self._end_stream()
                self._pending.append(one_line(line, self.line_chars))

    def flush(self) -> None:
        """The Attempt ended: send everything still waiting, and say how much was not forwarded."""
        with self._lock:
            self._end_stream()
            if self._dropped:
                self._pending.append(f"[{counted(self._dropped, 'more line', 'more lines')} not shown live; "
                                     "the transcript has them]")
                self._dropped = 0
            while self._pending and self.listener is not None:
                self._send(self._clock())

    def _end_stream(self) -> None:
        if self._stream:
            text = "".join(self._stream)
            self._stream.clear()
            if text.strip():
                self._accept(one_line(f"agent: {text}", self.line_chars))

    def _accept(self, line: str) -> None:
        if self._accepted >= self.max_total_lines:
            self._dropped += 1
            return
        self._accepted += 1
        self._pending.append(line)

    def _send(self, now: float) -> None:
        batch, self._pending = self._pending[: self.max_lines], self._pending[self.max_lines:]
        self._last_sent = now
        try:
            listener = self.listener
            if listener is not None:  # the callers checked; a listener that raised is dropped below
                listener(batch)
        except Exception:  # noqa: BLE001 - a broken log must not fail the agent's work
            self.listener = None
            self._pending.clear()


@contextmanager
def ticking(feed: LiveFeed | None, every_s: float = 1.0) -> Iterator[LiveFeed | None]:
    """Poll `feed` every `every_s` seconds from a daemon thread while the block runs; flush it on the way out.

    `with ticking(sink.live): execute_attempt(...)`: lines wait at most about `interval_s` + `every_s`.
    """
    if feed is None:
        yield None
        return
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(every_s):
            feed.poll()

    thread = threading.Thread(target=loop, name="awp-live-feed", daemon=True)
    thread.start()
    try:
        yield feed
    finally:
        stop.set()
        thread.join(timeout=max(1.0, every_s * 2))
        feed.flush()
