"""An Attempt's observable activity: JSONL events on disk and a readable Markdown transcript.

Events are for people and dashboards; they never decide lifecycle state (the verifier and the decision
function do). Every line is flushed as it is written, so a crash loses nothing already emitted, and every
payload is redacted with the account's secret values before it reaches the disk.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, TextIO, get_args

from awp_pipelines.failures import FailureEnvelope
from awp_pipelines.redact import redact_obj

EventType = Literal[
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
    "rate_limit_notice",
    "resume_started",
    "verifier_completed",
    "commit_created",
]
EVENT_TYPES: tuple[str, ...] = get_args(EventType)
RESERVED_KEYS = frozenset({"ts", "type", "attempt", "seq"})

TRANSCRIPT_MAX_CHARS = 200_000
_SUMMARY_CHARS = 200
_PHASE_OF: dict[str, str] = {
    "run_started": "Run",
    "resume_started": "Resume",
    "verifier_completed": "Verification",
    "commit_created": "Commit",
}


_second_cache: tuple[int, str] = (-1, "")


def _utc_now() -> str:
    """ISO-8601 UTC with milliseconds. The formatted second is cached: a stream writes thousands a second."""
    global _second_cache
    now = time.time()
    second = int(now)
    if _second_cache[0] != second:
        _second_cache = (second, datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S"))
    return f"{_second_cache[1]}.{int((now - second) * 1000):03d}Z"


@dataclass
class Counters:
    messages: int = 0
    tool_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    reasoning_tokens: int = 0
    cost_usd: float = 0.0
    cost_reported: bool = False  # the provider said what it cost (else a price table may)

    def count(self, event: Mapping[str, Any]) -> None:
        kind = event.get("type")
        if kind == "message_received":
            self.messages += 1
        elif kind == "tool_call_started":
            self.tool_calls += 1
        elif kind == "token_usage_updated":
            tokens = [int(event.get(k) or 0) for k in _TOKEN_KEYS]
            cost = float(event.get("cost_usd") or 0.0)
            if event.get("cumulative"):
                for key, value in zip(_TOKEN_KEYS, tokens, strict=True):
                    setattr(self, key, value)
                self.cost_usd = cost
            else:
                for key, value in zip(_TOKEN_KEYS, tokens, strict=True):
                    setattr(self, key, getattr(self, key) + value)
                self.cost_usd += cost
            self.cost_reported = self.cost_reported or bool(event.get("cost_reported"))


_TOKEN_KEYS = ("input_tokens", "output_tokens", "cached_input_tokens", "reasoning_tokens")


class EventSink:
    """Appends one JSON object per line to `path`: `{ts, type, attempt, seq, ...payload}`.

    Opening a file that already holds this attempt's events (a resumed process) continues its sequence
    numbers and counters. `secrets` are the literal credential values of the account in use.
    """

    def __init__(self, path: Path | str, attempt: str, secrets: Iterable[str] = (),
                 clock: Callable[[], str] = _utc_now) -> None:
        self.path = Path(path)
        self.attempt = attempt
        self._secrets = tuple(s for s in secrets if s)
        self._clock = clock
        self.counters = Counters()
        self._seq = 0
        self._fh: TextIO | None = None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        for event in self.iter_events():
            self.counters.count(event)
            self._seq = max(self._seq, int(event.get("seq") or 0))

    # -- writing -------------------------------------------------------------------------------------
    def emit(self, type: EventType, fields: Mapping[str, Any] | None = None, /, **more: Any) -> dict[str, Any]:
        """Write one event (redacted, flushed) and return it as written; fields as a mapping and/or keywords."""
        payload = {**(fields or {}), **more}
        if type not in EVENT_TYPES:
            raise ValueError(f"unknown event type {type!r}; known: {', '.join(EVENT_TYPES)}")
        clash = RESERVED_KEYS & payload.keys()
        if clash:
            raise ValueError(f"payload keys {sorted(clash)} are reserved")
        self._seq += 1
        event = {"ts": self._clock(), "type": type, "attempt": self.attempt, "seq": self._seq,
                 **redact_obj(payload, self._secrets)}
        line = json.dumps(event, ensure_ascii=False, default=str, sort_keys=False)
        if self._fh is None or self._fh.closed:
            # Kept open (append mode) between events: reopening per line cost more than the write.
            self._fh = self.path.open("a", encoding="utf-8")
        self._fh.write(line + "\n")
        self._fh.flush()
        self.counters.count(event)
        return event

    def close(self) -> None:
        """Close the file; a later event reopens it."""
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def __del__(self) -> None:
        self.close()

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

    def run_failed(self, failure: FailureEnvelope) -> dict[str, Any]:
        return self.emit("run_failed", **failure.model_dump())

    def resume_started(self, session_id: str | None, prompt: str = "Continue") -> dict[str, Any]:
        return self.emit("resume_started", session_id=session_id, prompt=prompt)

    def verifier_completed(self, passed: bool, failures: Iterable[str] = ()) -> dict[str, Any]:
        return self.emit("verifier_completed", passed=passed, failures=list(failures))

    def commit_created(self, repo: str, status: str, sha: str | None = None) -> dict[str, Any]:
        return self.emit("commit_created", repo=repo, status=status, sha=sha)

    # -- reading -------------------------------------------------------------------------------------
    @property
    def usage_totals(self) -> dict[str, Any]:
        c = self.counters
        return {"input_tokens": c.input_tokens, "output_tokens": c.output_tokens, "cost_usd": c.cost_usd}

    def events(self) -> list[dict[str, Any]]:
        """This attempt's events, as stored."""
        return list(self.iter_events())

    def iter_events(self) -> Iterator[dict[str, Any]]:
        return (e for e in iter_events(self.path) if e.get("attempt") == self.attempt)

    def transcript_markdown(self, max_chars: int = TRANSCRIPT_MAX_CHARS) -> str:
        return render_transcript(self.iter_events(), title=f"Attempt {self.attempt}", max_chars=max_chars,
                                 source=self.path)


def read_events(path: Path | str) -> list[dict[str, Any]]:
    """Events of a JSONL file; [] when it does not exist. A torn last line (crash mid-write) is skipped."""
    return list(iter_events(path))


def iter_events(path: Path | str) -> Iterator[dict[str, Any]]:
    """The events of a JSONL file one at a time, in bounded memory (read_events' rules)."""
    file = Path(path)
    if not file.exists():
        return
    with file.open(encoding="utf-8") as fh:
        pending: str | None = None
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


def _parse_line(line: str, number: int, file: Path, last: bool) -> dict[str, Any] | None:
    if not line.strip():
        return None
    try:
        event = json.loads(line)
    except json.JSONDecodeError:
        if last:
            return None
        raise ValueError(f"{file}:{number}: not a JSON event line") from None
    return event if isinstance(event, dict) else None


# -- transcript --------------------------------------------------------------------------------------
# Tool inputs worth showing on their own: the shell command, the file, the search.
_SALIENT_KEYS = ("command", "cmd", "file_path", "path", "pattern", "query", "url", "description")


def _plain(value: Any) -> str:
    """A value as prose: salient key of a mapping, else `key: value` pairs; never a JSON dump."""
    if isinstance(value, Mapping):
        for key in _SALIENT_KEYS:
            if value.get(key):
                return _plain(value[key])
        return ", ".join(f"{k}: {_plain(v)}" for k, v in value.items() if v not in (None, "", [], {}))
    if isinstance(value, list | tuple):
        return ", ".join(_plain(v) for v in value)
    return "" if value is None else str(value)


def _one_line(value: Any, limit: int = _SUMMARY_CHARS) -> str:
    text = " ".join(_plain(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _quote(text: str, indent: str = "", max_lines: int = 20) -> str:
    lines = str(text).strip().splitlines() or [""]
    if len(lines) > max_lines:
        lines = [*lines[:max_lines], f"[... {len(lines) - max_lines} more lines]"]
    return "\n".join(f"{indent}> {line}".rstrip() for line in lines)


def _render_event(event: Mapping[str, Any]) -> str | None:
    kind = event.get("type")
    name = f"`{_one_line(event.get('name'), 80) or 'tool'}`"
    if kind == "message_received":
        return str(event.get("text") or "").strip() or None
    if kind == "tool_call_started":
        detail = _one_line(event.get("input"))
        return f"- tool {name}" + (f": {detail}" if detail else "")
    if kind == "tool_call_completed":
        detail = _one_line(event.get("output"))
        return f"- tool {name} done" + (f": {detail}" if detail else "")
    if kind == "tool_call_failed":
        return f"- tool {name} failed:\n{_quote(_plain(event.get('error')), indent='  ')}"
    if kind == "file_written":
        repo = event.get("repo")
        return f"- wrote `{(repo + ':') if repo else ''}{event.get('path')}`"
    if kind == "run_started":
        info = [f"{k}: {_one_line(event[k], 80)}" for k in ("provider", "account", "model", "mode", "session_id")
                if event.get(k)]
        return f"_{' · '.join(info)}_" if info else None
    if kind == "resume_started":
        parts = ["_resumed"]
        if event.get("session_id"):
            parts.append(f"session `{_one_line(event['session_id'], 80)}`")
        if event.get("after"):
            parts.append(f"after {_one_line(event['after'], 80)}")
        return " ".join(parts) + f" with “{_one_line(event.get('prompt') or 'Continue', 80)}”_"
    if kind == "thinking":
        text = _one_line(event.get("text"), 400)
        return f"_thinking: {text}_" if text else None
    if kind == "rate_limit_notice":
        info = [f"{k}: {_one_line(event[k], 80)}" for k in ("status", "error_status", "resets_at", "retry_in_ms")
                if event.get(k) not in (None, "")]
        return "- rate limit" + (f" ({', '.join(info)})" if info else "")
    if kind == "run_completed":
        return "**Run completed.**"
    if kind in ("run_failed", "error_occurred", "run_cancelled"):
        label = {"run_failed": "Run failed", "error_occurred": "Error", "run_cancelled": "Run cancelled"}[kind]
        cls = event.get("failure_class")
        message = event.get("message") or event.get("error") or ""
        head = f"**{label}**" + (f" ({cls})" if cls else "")
        return head + (f":\n\n{_quote(message)}" if message else "")
    if kind == "verifier_completed":
        lines = ["**Verifier passed.**" if event.get("passed") else "**Verifier failed:**"]
        lines += [f"- {_one_line(item, 400)}" for item in event.get("failures") or []]
        return "\n".join(lines)
    if kind == "commit_created":
        sha = event.get("sha")
        return f"- `{event.get('repo')}`: {event.get('status')}" + (f" `{sha}`" if sha else "")
    return None  # token usage goes to the footer; unknown types are left to the JSONL


def render_transcript(events: Iterable[Mapping[str, Any]], title: str = "Transcript",
                      max_chars: int = TRANSCRIPT_MAX_CHARS, source: Path | str | None = None) -> str:
    """Markdown: a heading per phase, assistant text as paragraphs, tools as bullets, errors quoted.

    Bounded memory: once the kept text passes `max_chars`, later blocks are only measured (for the
    truncation note) and counted (for the footer), so a 1 GB event stream renders in constant memory.
    """
    blocks: list[str] = [f"# {title}"]
    phase: str | None = None
    stream: list[str] = []
    stream_chars = 0
    counters = Counters()
    bullets_open = 0  # len(blocks) while the last block is a list of event bullets
    kept = total = len(blocks[0]) + 2  # characters of the body kept / that the whole body would have
    full = False

    def add(block: str, merge: bool = False) -> None:
        nonlocal kept, total, full
        size = len(block) + 1 if merge else (len(block) + 2 if block else 0)
        total += size
        if full:
            return
        if merge:
            blocks[-1] += "\n" + block
        else:
            blocks.append(block)
        kept += size
        full = kept > max_chars

    def flush_stream() -> None:
        nonlocal stream_chars
        if stream:
            add("".join(stream).strip())
            stream.clear()
            stream_chars = 0

    for event in events:
        counters.count(event)
        kind = str(event.get("type"))
        wanted = _PHASE_OF.get(kind, phase or "Run")
        if wanted != phase:
            flush_stream()
            phase = wanted
            add(f"## {phase}")
        if kind == "message_streamed":
            if stream_chars <= max_chars:
                delta = str(event.get("delta") or "")
                stream.append(delta)
                stream_chars += len(delta)
            continue
        flush_stream()
        rendered = _render_event(event)
        if not rendered:
            continue
        bullet = rendered.startswith("- ")
        merge = bool(bullet and bullets_open and len(blocks) == bullets_open)
        add(rendered, merge)  # consecutive bullets form one tight list
        bullets_open = len(blocks) if bullet and not full else 0
    flush_stream()
    footer = ("---\n\n"
              f"messages: {counters.messages} · tool calls: {counters.tool_calls} · "
              f"tokens in/out: {counters.input_tokens}/{counters.output_tokens} · "
              f"cost: ${counters.cost_usd:.4f}\n")
    body = "\n\n".join(b for b in blocks if b) + "\n\n"
    if not full and len(body) + len(footer) <= max_chars:
        return body + footer
    where = f"; the full events are in {source}" if source else ""
    room = max(0, max_chars - len(footer) - 200 - len(where))
    cut = body.rfind("\n", 0, room)
    shown = cut if cut > 0 else room
    note = f"\n\n_[transcript truncated: {shown} of {max(total, len(body))} characters shown{where}]_\n\n"
    return body[:shown] + note + footer
