"""An Attempt's observable activity: JSONL events on disk, a readable Markdown transcript (transcript.py)
and, optionally, a live feed of human lines for the run's log (live.py).

Events are for people and dashboards; they never decide lifecycle state (the verifier and the decision
function do). Every line is flushed as it is written, so a crash loses nothing already emitted, and every
payload is redacted with the account's secret values before it reaches the disk or the live feed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO, Literal, get_args

from awp_pipelines.core.records import jsonl
from awp_pipelines.core.records.failures import FailureEnvelope
from awp_pipelines.core.records.live_lines import LiveFeed, LiveListener
from awp_pipelines.core.records.redact import Redactor
from awp_pipelines.core.records.transcript import (
    TRANSCRIPT_MAX_CHARS,
    Counters,
    TranscriptBuilder,
    render_transcript,
)
from awp_pipelines.core.records.workspace import WorkspaceError, diff_stat

__all__ = ["EVENT_TYPES", "TRANSCRIPT_MAX_CHARS", "Counters", "EventSink", "EventType", "iter_events",
           "read_events", "render_transcript"]

EventType = Literal[
    "prompt_sent",
    "run_started",
    "session_started",
    "message_received",
    "thinking",
    "message_streamed",
    "tool_call_started",
    "tool_call_completed",
    "tool_call_failed",
    "token_usage_updated",
    "file_written",
    "run_completed",
    "run_failed",
    "run_cancelled",
    "error_occurred",
    "resume_started",
    "steer_received",
    "verifier_completed",
    "commit_created",
    "tree_set_aside",
    "files_changed",
    "rate_limit_notice",
    "network_denied",
    "config_discarded",
]
EVENT_TYPES: tuple[str, ...] = get_args(EventType)
_KNOWN_TYPES = frozenset(EVENT_TYPES)
RESERVED_KEYS = frozenset({"ts", "type", "attempt", "seq"})
FILES_STORED = 500  # rows per files_changed event


_second_cache: tuple[int, str] = (-1, "")
_milli_cache: tuple[int, str] = (-1, "")
WRITE_BUFFER_BYTES = 1 << 20  # a stream's events reach the file per chunk read (flush), not per 8 KiB


def _utc_now() -> str:
    """ISO-8601 UTC with milliseconds. Cached per millisecond (a stream writes a hundred events in one) and
    the formatted second per second."""
    global _second_cache, _milli_cache
    milli = int(time.time() * 1000)
    if _milli_cache[0] == milli:
        return _milli_cache[1]
    second, rest = divmod(milli, 1000)
    if _second_cache[0] != second:
        _second_cache = (second, datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S"))
    _milli_cache = (milli, f"{_second_cache[1]}.{rest:03d}Z")
    return _milli_cache[1]


class EventSink:
    """Appends one JSON object per line to `path`: `{ts, type, attempt, seq, ...payload}`.

    Opening a file that already holds this attempt's events (a resumed process) continues its sequence
    numbers and counters. `secrets` are the literal credential values of the account in use. `root` is the
    packet folder: the transcript names the JSONL relative to it. `live`, when given, receives the events
    as batched human lines while the Attempt runs (see `LiveFeed`); call `close()` when the Attempt ends.
    """

    def __init__(self, path: Path | str, attempt: str, secrets: Iterable[str] = (),
                 clock: Callable[[], str] = _utc_now, *, root: Path | str | None = None,
                 live: LiveListener | LiveFeed | None = None) -> None:
        self.path = Path(path)
        self.attempt = attempt
        self.root = Path(root) if root is not None else None
        self._redactor = Redactor(tuple(s for s in secrets if s))
        self._clock = clock
        self.live = live if isinstance(live, LiveFeed) or live is None else LiveFeed(live)
        self.counters = Counters()
        self._seq = 0
        self._fh: BinaryIO | None = None
        self._flush_each = True  # off inside `batch()`: the stream reader flushes once per chunk it read
        # Called with the counters after each usage event (the engine's spend cap); it may raise to stop the
        # session there. None: nothing watches the spend.
        self.on_usage: Callable[[Counters], None] | None = None
        # The transcript is built as the events go out (reading a long stream's JSONL back cost as much as
        # writing it); `_size` is what the file holds if only this sink wrote to it since it read it.
        self._transcript = TranscriptBuilder(f"Attempt {attempt}", TRANSCRIPT_MAX_CHARS, counted=self.counters)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        for event in self.iter_events():
            self.counters.count(event)
            self._transcript.add(event)
            self._seq = max(self._seq, int(event.get("seq") or 0))
        self._size = self.path.stat().st_size if self.path.exists() else 0

    def add_secret(self, value: str) -> None:
        """One more literal never written out (e.g. an agent-control token the agent might echo)."""
        if value and value not in self._redactor.literals:
            self._redactor = self._redactor.with_values([value])

    # -- writing -------------------------------------------------------------------------------------
    def emit(self, type: EventType, fields: Mapping[str, Any] | None = None, /, **more: Any) -> dict[str, Any]:
        """Write one event (redacted, flushed) and return it as written; fields as a mapping and/or keywords."""
        # One mapping to read (the redaction below makes the event's own copy): no merge unless both are given.
        payload = ({**fields, **more} if more else fields) if fields else more
        if type not in _KNOWN_TYPES:
            raise ValueError(f"unknown event type {type!r}; known: {', '.join(EVENT_TYPES)}")
        if not RESERVED_KEYS.isdisjoint(payload):
            raise ValueError(f"payload keys {sorted(RESERVED_KEYS & payload.keys())} are reserved")
        self._seq += 1
        event = self._redactor.into({"ts": self._clock(), "type": type, "attempt": self.attempt, "seq": self._seq},
                                    payload)
        if self._fh is None or self._fh.closed:
            # Kept open (append mode) between events: reopening per line cost more than the write.
            self._fh = self.path.open("ab", buffering=WRITE_BUFFER_BYTES)
        line = jsonl.dumps_line(event)
        self._fh.write(line)
        self._size += len(line)
        if self._flush_each:
            self._fh.flush()
        self.counters.count(event)
        self._transcript.add(event)
        if self.live is not None:
            self.live.add(event)
        if type == "token_usage_updated" and self.on_usage is not None:
            self.flush()  # the event that crossed a cap is on disk before the stop it causes
            self.on_usage(self.counters)
        return event

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Events written inside reach the file at each `flush()` (and at the end), not one by one: a stream
        reader flushes after each chunk it read, so a crash loses no more than the chunk it was reading."""
        self._flush_each = False
        try:
            yield
        finally:
            self._flush_each = True
            self.flush()

    def flush(self) -> None:
        if self._fh is not None and not self._fh.closed:
            self._fh.flush()

    def close(self) -> None:
        """The Attempt ended: the live feed sends what still waits; the file closes (a later event reopens it;
        every line was flushed as written)."""
        if self.live is not None:
            self.live.flush()
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def __del__(self) -> None:
        if self._fh is not None:
            self._fh.close()

    def prompt_sent(self, text: str) -> dict[str, Any]:
        """The prompt exactly as the agent receives it (a repair's unmet items included); redacted like all."""
        return self.emit("prompt_sent", text=text)

    def run_started(self, **info: Any) -> dict[str, Any]:
        return self.emit("run_started", **info)

    def message(self, text: str) -> dict[str, Any]:
        """A complete assistant message."""
        return self.emit("message_received", text=text)

    def delta(self, text: str) -> dict[str, Any]:
        """A streamed fragment of an assistant message."""
        return self.emit("message_streamed", delta=text)

    def tool_call_started(self, name: str, input: Any = None, call_id: str | None = None) -> dict[str, Any]:
        return self.emit("tool_call_started", name=name, input=input, call_id=call_id)

    def tool_call_completed(self, name: str, output: Any = None, call_id: str | None = None) -> dict[str, Any]:
        return self.emit("tool_call_completed", name=name, output=output, call_id=call_id)

    def tool_call_failed(self, name: str, error: str, call_id: str | None = None) -> dict[str, Any]:
        return self.emit("tool_call_failed", name=name, error=error, call_id=call_id)

    def usage(self, input_tokens: int = 0, output_tokens: int = 0, cost_usd: float = 0.0,
              cumulative: bool = False, cached_input_tokens: int = 0, reasoning_tokens: int = 0,
              cost_reported: bool = False) -> dict[str, Any]:
        """Token and cost telemetry: increments, or running totals when `cumulative`.

        `cost_reported` says the provider itself gave `cost_usd` (0 otherwise means "not reported")."""
        extra: dict[str, Any] = {}
        if cached_input_tokens or reasoning_tokens or cost_reported:
            extra = {"cached_input_tokens": cached_input_tokens, "reasoning_tokens": reasoning_tokens,
                     "cost_reported": cost_reported}
        return self.emit("token_usage_updated", input_tokens=input_tokens, output_tokens=output_tokens,
                         cost_usd=cost_usd, cumulative=cumulative, **extra)

    def session_started(self, session_id: str | None, **info: Any) -> dict[str, Any]:
        """The provider named its session (the id a resume continues)."""
        return self.emit("session_started", session_id=session_id, **info)

    def thinking(self, text: str) -> dict[str, Any]:
        return self.emit("thinking", text=text)

    def rate_limit_notice(self, **info: Any) -> dict[str, Any]:
        """The provider reported a rate limit (a warning, a retry, or a rejection)."""
        return self.emit("rate_limit_notice", **info)

    def error(self, message: str, **info: Any) -> dict[str, Any]:
        """An error the provider reported; the run's failure, if any, is `run_failed`."""
        return self.emit("error_occurred", error=message, **info)

    def file_written(self, path: str, repo: str | None = None) -> dict[str, Any]:
        return self.emit("file_written", path=path, repo=repo)

    def run_completed(self, **info: Any) -> dict[str, Any]:
        return self.emit("run_completed", **info)

    def run_failed(self, failure: FailureEnvelope, **more: Any) -> dict[str, Any]:
        """The session ended without its result: `run_cancelled` when a person cancelled it, else `run_failed`
        (the envelope's fields either way, so a reader of the failure class finds it on both)."""
        return self.emit(ended_type(failure), failure.model_dump(), **more)

    def resume_started(self, session_id: str | None, prompt: str = "Continue") -> dict[str, Any]:
        return self.emit("resume_started", session_id=session_id, prompt=prompt)

    def steer_received(self, text: str, author: str, steer_id: str, lane: str, delivered: bool = True,
                       refused: str = "") -> dict[str, Any]:
        """A person's steer reached the Attempt (`awp control steer`): delivered into the session, or refused."""
        return self.emit("steer_received", text=text, author=author, steer=steer_id, lane=lane, delivered=delivered,
                         **({"refused": refused} if refused else {}))

    def verifier_completed(self, passed: bool, failures: Iterable[str] = ()) -> dict[str, Any]:
        return self.emit("verifier_completed", passed=passed, failures=list(failures))

    def commit_created(self, repo: str, status: str, sha: str | None = None) -> dict[str, Any]:
        return self.emit("commit_created", repo=repo, status=status, sha=sha)

    def tree_set_aside(self, repo: str, sha: str) -> dict[str, Any]:
        """A person's changes found in `repo` before the Attempt, stashed (`dirty_tree: set_aside`)."""
        return self.emit("tree_set_aside", repo=repo, sha=sha)

    def files_changed(self, repo: str, files: Sequence[Mapping[str, Any]], base: str | None = None) -> dict[str, Any]:
        """What the Attempt changed in one repo, `git diff --stat`-like: one `{path, status, added, removed}` per
        file (status A/M/D/R; added/removed None for binary). `workspace.diff_stat(repo, base)` builds it."""
        rows = [{"path": str(f["path"]), "status": f.get("status") or "M", "added": f.get("added"),
                 "removed": f.get("removed")} for f in files]
        # Totals over every file; the rows themselves are capped so one event line stays small.
        return self.emit("files_changed", repo=repo, base=base, total_files=len(rows),
                         added=sum(int(r["added"] or 0) for r in rows),
                         removed=sum(int(r["removed"] or 0) for r in rows), files=rows[:FILES_STORED])

    def files_changed_since(self, repos: Mapping[str, Path | str], checkpoint: Mapping[str, str | None]) -> None:
        """`files_changed` for each target repo against the Attempt's checkpoint (HEAD before it ran). A git
        error leaves that repo out: what the agent changed is observed here, never decided."""
        for name, path in repos.items():
            try:
                files = diff_stat(path, checkpoint.get(name))
            except WorkspaceError:
                continue
            self.files_changed(name, files, checkpoint.get(name))

    # -- reading -------------------------------------------------------------------------------------
    def events(self) -> list[dict[str, Any]]:
        """This attempt's events, as stored."""
        return list(self.iter_events())

    def iter_events(self) -> Iterator[dict[str, Any]]:
        return (e for e in iter_events(self.path) if e.get("attempt") == self.attempt)

    def transcript_markdown(self, max_chars: int = TRANSCRIPT_MAX_CHARS) -> str:
        """The transcript of this attempt's events: the one built as they were written, unless the JSONL holds
        more than this sink wrote (another writer appended) or a longer one is asked; then from the JSONL."""
        if max_chars <= self._transcript.keep_chars and self._wrote_all():
            return self._transcript.markdown(max_chars, source=self.source_name())
        return render_transcript(self.iter_events(), title=f"Attempt {self.attempt}", max_chars=max_chars,
                                 source=self.source_name())

    def _wrote_all(self) -> bool:
        self.flush()
        try:
            return self.path.stat().st_size == self._size
        except OSError:
            return False

    def source_name(self) -> str:
        """The JSONL as a reader should see it: relative to the packet root; without one (or outside it),
        from its state folder on (`.awp/events/...` by default). Never this machine's absolute path."""
        path = self.path.resolve()
        if self.root is not None:
            try:
                return path.relative_to(self.root.resolve()).as_posix()
            except ValueError:
                pass
        parts = path.parts
        if "events" not in parts:
            return path.name
        start = len(parts) - 1 - parts[::-1].index("events")
        if start > 0 and parts[start - 1] == ".awp":  # the default state folder, <packet>/.awp
            start -= 1
        return "/".join(parts[start:])


def ended_type(failure: FailureEnvelope) -> EventType:
    """The event that says a session ended with `failure`: a person's cancel is no failure of the agent."""
    return "run_cancelled" if failure.failure_class == "user_cancelled" else "run_failed"


def read_events(path: Path | str) -> list[dict[str, Any]]:
    """Events of a JSONL file; [] when it does not exist. A torn last line (crash mid-write) is skipped."""
    return list(iter_events(path))


def iter_events(path: Path | str) -> Iterator[dict[str, Any]]:
    """The events of a JSONL file one at a time, in bounded memory (read_events' rules)."""
    file = Path(path)
    if not file.exists():
        return
    with file.open("rb") as fh:
        pending: bytes | None = None
        number = 0
        for line in fh:
            if pending is not None:
                event = _parse_line(pending, number, file, last=False)
                if event is not None:
                    yield event
            pending = line
            number += 1
        if pending is not None:
            event = _parse_line(pending, number, file, last=True)
            if event is not None:
                yield event


def _parse_line(line: bytes, number: int, file: Path, last: bool) -> dict[str, Any] | None:
    if not line.strip():
        return None
    try:
        event = jsonl.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError):
        if last:
            return None
        raise ValueError(f"{file}:{number}: not a JSON event line") from None
    return event if isinstance(event, dict) else None
