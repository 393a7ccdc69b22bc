"""An Attempt's observable activity: JSONL events on disk and a readable Markdown transcript.

Events are for people and dashboards; they never decide lifecycle state (the verifier and the decision
function do). Every line is flushed as it is written, so a crash loses nothing already emitted, and every
payload is redacted with the account's secret values before it reaches the disk.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, get_args

from awp_pipelines.failures import FailureEnvelope
from awp_pipelines.redact import redact_obj

EventType = Literal[
    "run_started",
    "message_received",
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


def _utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class Counters:
    messages: int = 0
    tool_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0

    def count(self, event: Mapping[str, Any]) -> None:
        kind = event.get("type")
        if kind == "message_received":
            self.messages += 1
        elif kind == "tool_call_started":
            self.tool_calls += 1
        elif kind == "token_usage_updated":
            values = (int(event.get("input_tokens") or 0), int(event.get("output_tokens") or 0),
                      float(event.get("cost_usd") or 0.0))
            if event.get("cumulative"):
                self.input_tokens, self.output_tokens, self.cost_usd = values
            else:
                self.input_tokens += values[0]
                self.output_tokens += values[1]
                self.cost_usd += values[2]


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
        self.path.parent.mkdir(parents=True, exist_ok=True)
        for event in self.events():
            self.counters.count(event)
            self._seq = max(self._seq, int(event.get("seq") or 0))

    def add_secret(self, value: str) -> None:
        """One more literal never written out (e.g. an agent-control token the agent might echo)."""
        if value and value not in self._secrets:
            self._secrets = (*self._secrets, value)

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
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(line + "\n")
            fh.flush()
        self.counters.count(event)
        return event

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
              cumulative: bool = False) -> dict[str, Any]:
        """Token and cost telemetry: increments, or running totals when `cumulative`."""
        return self.emit("token_usage_updated", input_tokens=input_tokens, output_tokens=output_tokens,
                         cost_usd=cost_usd, cumulative=cumulative)

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
        return [e for e in read_events(self.path) if e.get("attempt") == self.attempt]

    def transcript_markdown(self, max_chars: int = TRANSCRIPT_MAX_CHARS) -> str:
        return render_transcript(self.events(), title=f"Attempt {self.attempt}", max_chars=max_chars,
                                 source=self.path)


def read_events(path: Path | str) -> list[dict[str, Any]]:
    """Events of a JSONL file; [] when it does not exist. A torn last line (crash mid-write) is skipped."""
    file = Path(path)
    if not file.exists():
        return []
    events: list[dict[str, Any]] = []
    lines = file.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            if number == len(lines):
                break
            raise ValueError(f"{file}:{number}: not a JSON event line") from None
        if isinstance(event, dict):
            events.append(event)
    return events


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
    """Markdown: a heading per phase, assistant text as paragraphs, tools as bullets, errors quoted."""
    blocks: list[str] = [f"# {title}"]
    phase: str | None = None
    stream: list[str] = []
    counters = Counters()
    bullets_open = 0  # len(blocks) while the last block is a list of event bullets

    def flush_stream() -> None:
        if stream:
            blocks.append("".join(stream).strip())
            stream.clear()

    for event in events:
        counters.count(event)
        kind = str(event.get("type"))
        wanted = _PHASE_OF.get(kind, phase or "Run")
        if wanted != phase:
            flush_stream()
            phase = wanted
            blocks.append(f"## {phase}")
        if kind == "message_streamed":
            stream.append(str(event.get("delta") or ""))
            continue
        flush_stream()
        rendered = _render_event(event)
        if not rendered:
            continue
        bullet = rendered.startswith("- ")
        if bullet and bullets_open and len(blocks) == bullets_open:
            blocks[-1] += "\n" + rendered  # consecutive bullets form one tight list
        else:
            blocks.append(rendered)
        bullets_open = len(blocks) if bullet else 0
    flush_stream()
    footer = ("---\n\n"
              f"messages: {counters.messages} · tool calls: {counters.tool_calls} · "
              f"tokens in/out: {counters.input_tokens}/{counters.output_tokens} · "
              f"cost: ${counters.cost_usd:.4f}\n")
    body = "\n\n".join(b for b in blocks if b) + "\n\n"
    if len(body) + len(footer) <= max_chars:
        return body + footer
    where = f"; the full events are in {source}" if source else ""
    room = max(0, max_chars - len(footer) - 200 - len(where))
    cut = body.rfind("\n", 0, room)
    shown = cut if cut > 0 else room
    note = f"\n\n_[transcript truncated: {shown} of {len(body)} characters shown{where}]_\n\n"
    return body[:shown] + note + footer
