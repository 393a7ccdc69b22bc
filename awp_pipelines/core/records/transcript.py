"""An Attempt's events as a conversation: the prompt as sent, the agent's messages and tool calls, the files it
changed, then verification and commit. Markdown for the asset's metadata cell, so headings stay small (H3
for the title, H4 for sections: an H1 inside a table cell dwarfs the page). Bounded in size; the full
events stay in the JSONL it points at, by a path relative to the packet.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_right
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from awp_pipelines.core.records.plural import counted
from awp_pipelines.core.records.usage import TOKEN_FIELDS

TRANSCRIPT_MAX_CHARS = 200_000
# The copy in each Attempt's stored metadata (the asset page): every Attempt stores one, so it is kept small;
# the JSONL named in its footer holds the whole stream.
METADATA_TRANSCRIPT_CHARS = 16_000
PROMPT_MAX_CHARS = 12_000  # the prompt shares the transcript's bound; its tail (repair items) is kept
FILES_SHOWN = 20  # per repo; the rest are counted
_SUMMARY_CHARS = 200
# The section each event opens; other events stay in the current section ("Agent" after a closed one).
_PHASE_OF: dict[str, str] = {
    "prompt_sent": "Prompt",
    "run_started": "Agent",
    "resume_started": "Resume",
    "files_changed": "Files changed",
    "verifier_completed": "Verification",
    "commit_created": "Commit",
}
_CLOSED_PHASES = frozenset({"Prompt", "Files changed"})
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


@dataclass
class Counters:
    """A session's running totals, counted from its events (mutable: it counts while the stream flows)."""

    messages: int = 0
    tool_calls: int = 0
    tokens: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TOKEN_FIELDS, 0))  # usage.TOKEN_FIELDS
    cost_usd: float = 0.0
    cost_reported: bool = False  # the provider said what it cost (else a price table may)
    reported_model: str | None = None  # the model the provider said its session runs (cli_confirmation)
    key_source: str | None = None  # where the CLI said its key came from (Claude Code's apiKeySource)

    def count(self, event: Mapping[str, Any]) -> None:
        kind = event.get("type")
        if kind == "session_started":
            self.reported_model = str(event["model"]) if event.get("model") else self.reported_model
            self.key_source = str(event["api_key_source"]) if event.get("api_key_source") else self.key_source
        elif kind == "message_received":
            self.messages += 1
        elif kind == "tool_call_started":
            self.tool_calls += 1
        elif kind == "token_usage_updated":
            cost = float(event.get("cost_usd") or 0.0)
            if event.get("cumulative"):
                for key in TOKEN_FIELDS:
                    self.tokens[key] = int(event.get(key) or 0)
                self.cost_usd = cost
            else:
                for key in TOKEN_FIELDS:
                    self.tokens[key] += int(event.get(key) or 0)
                self.cost_usd += cost
            self.cost_reported = self.cost_reported or bool(event.get("cost_reported"))


# Tool inputs worth showing on their own: the shell command, the file, the search.
_SALIENT_KEYS = ("command", "cmd", "file_path", "path", "pattern", "query", "url", "description")


def plain(value: Any) -> str:
    """A value as prose: salient key of a mapping, else `key: value` pairs; never a JSON dump."""
    if type(value) is str:  # most values: skip the slower ABC checks below
        return value
    if isinstance(value, Mapping):
        for key in _SALIENT_KEYS:
            if value.get(key):
                return plain(value[key])
        return ", ".join(f"{k}: {plain(v)}" for k, v in value.items() if v not in (None, "", [], {}))
    if isinstance(value, list | tuple):
        return ", ".join(plain(v) for v in value)
    return "" if value is None else str(value)


def one_line(value: Any, limit: int = _SUMMARY_CHARS) -> str:
    raw = plain(value)
    if len(raw) > 2 * limit:
        # A long text is cut anyway: collapse only its head. The collapsed head is a prefix of the whole
        # collapsed text, so when it is already past the limit, the cut is the same.
        head = " ".join(raw[: 2 * limit].split())
        if len(head) > limit:
            return head[: limit - 1] + "…"
    text = " ".join(raw.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _quote(text: str, indent: str = "", max_lines: int = 20) -> str:
    lines = str(text).strip().splitlines() or [""]
    if len(lines) > max_lines:
        lines = [*lines[:max_lines], f"[... {counted(len(lines) - max_lines, 'more line', 'more lines')}]"]
    return "\n".join(f"{indent}> {line}".rstrip() for line in lines)


def _cap_middle(text: str, limit: int) -> str:
    """Head and tail of a long text: a repair prompt's unmet items are at its end, so they survive."""
    if len(text) <= limit:
        return text
    half = limit // 2
    head, tail = text[:half], text[-half:]
    head = head[: head.rfind("\n")] if "\n" in head else head
    tail = tail[tail.find("\n") + 1:] if "\n" in tail else tail
    return f"{head}\n\n[... {len(text) - len(head) - len(tail)} characters of the prompt not shown ...]\n\n{tail}"


def prompt_block(text: str, limit: int = PROMPT_MAX_CHARS) -> str:
    """The prompt as a quote; its own headings become bold lines so they do not outrank the transcript's."""
    lines, fenced = [], False
    for line in _cap_middle(str(text).strip(), limit).splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        heading = None if fenced else _HEADING.match(line)
        lines.append(f"**{heading.group(2)}**" if heading else line)
    return "\n".join(f"> {line}".rstrip() for line in lines or [""])


def diff_line(change: Mapping[str, Any]) -> str:
    """`path` (new|deleted) +added −removed; `binary` when git counts no lines."""
    status = {"A": " (new)", "D": " (deleted)", "R": " (renamed)"}.get(str(change.get("status") or ""), "")
    added, removed = change.get("added"), change.get("removed")
    counts = "binary" if added is None and removed is None else f"+{added or 0} −{removed or 0}"
    return f"`{one_line(change.get('path'), 160)}`{status} {counts}"


def files_summary(event: Mapping[str, Any]) -> tuple[str, list[str]]:
    """(`repo: N files changed, +a −r`, per-file lines capped at FILES_SHOWN) of a files_changed event; totals
    from the event when it carries them (its rows may be capped), else summed from its rows."""
    files = list(event.get("files") or [])
    total = int(event.get("total_files") or len(files))
    added = event.get("added") if event.get("added") is not None else sum(int(f.get("added") or 0) for f in files)
    removed = (event.get("removed") if event.get("removed") is not None
               else sum(int(f.get("removed") or 0) for f in files))
    head = f"{event.get('repo')}: {total} file{'' if total == 1 else 's'} changed, +{added} −{removed}"
    lines = [diff_line(f) for f in files[:FILES_SHOWN]]
    if total > len(lines):
        lines.append(f"… and {total - len(lines)} more")
    return head, lines


def _tool_name(event: Mapping[str, Any]) -> str:
    return f"`{one_line(event.get('name'), 80) or 'tool'}`"


def _render_event(event: Mapping[str, Any]) -> str | None:
    kind = event.get("type")
    if kind == "prompt_sent":
        return prompt_block(str(event.get("text") or ""))
    if kind == "message_received":
        return str(event.get("text") or "").strip() or None
    if kind == "thinking":
        text = one_line(event.get("text"), 400)
        return f"_thinking: {text}_" if text else None
    if kind == "rate_limit_notice":
        info = [f"{k}: {one_line(event[k], 80)}" for k in ("status", "error_status", "resets_at", "retry_in_ms")
                if event.get(k) not in (None, "")]
        return "- rate limit" + (f" ({', '.join(info)})" if info else "")
    if kind == "tool_call_started":
        detail = one_line(event.get("input"))
        return f"- tool {_tool_name(event)}" + (f": {detail}" if detail else "")
    if kind == "tool_call_completed":
        detail = one_line(event.get("output"))
        return f"- tool {_tool_name(event)} done" + (f": {detail}" if detail else "")
    if kind == "tool_call_failed":
        return f"- tool {_tool_name(event)} failed:\n{_quote(plain(event.get('error')), indent='  ')}"
    if kind == "file_written":
        repo = event.get("repo")
        return f"- wrote `{(repo + ':') if repo else ''}{event.get('path')}`"
    if kind == "files_changed":
        if not event.get("files") and not event.get("total_files"):
            return f"- `{event.get('repo')}`: no changes"
        head, lines = files_summary(event)
        return "- " + head.replace(f"{event.get('repo')}:", f"`{event.get('repo')}`:", 1) + "".join(
            f"\n  - {line}" for line in lines)
    if kind == "run_started":
        info = [f"{k}: {one_line(event[k], 80)}" for k in ("provider", "account", "model", "mode", "session_id")
                if event.get(k)]
        return f"_{' · '.join(info)}_" if info else None
    if kind == "steer_received":
        verdict = "" if event.get("delivered", True) else f" (refused: {one_line(event.get('refused'), 120)})"
        return f"> **Steer from {one_line(event.get('author'), 60)}**{verdict}: {one_line(event.get('text'), 2000)}"
    if kind == "resume_started":
        parts = ["_resumed"]
        if event.get("session_id"):
            parts.append(f"session `{one_line(event['session_id'], 80)}`")
        if event.get("after"):
            parts.append(f"after {one_line(event['after'], 80)}")
        return " ".join(parts) + f" with “{one_line(event.get('prompt') or 'Continue', 80)}”_"
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
        lines += [f"- {one_line(item, 400)}" for item in event.get("failures") or []]
        return "\n".join(lines)
    if kind == "tree_set_aside":
        return (f"- `{event.get('repo')}`: changes found in the tree were set aside as git stash `{event.get('sha')}` "
                "(`git stash pop` brings them back)")
    if kind == "commit_created":
        sha = event.get("sha")
        return f"- `{event.get('repo')}`: {event.get('status')}" + (f" `{sha}`" if sha else "")
    return None  # token usage goes to the footer; unknown types are left to the JSONL


def render_transcript(events: Iterable[Mapping[str, Any]], title: str = "Transcript",
                      max_chars: int = TRANSCRIPT_MAX_CHARS, source: str | None = None) -> str:
    """Markdown: a small heading per section, assistant text as paragraphs, tools as bullets, errors quoted.

    `source` is where the full JSONL is, as the reader should see it (relative to the packet, not the machine).
    Bounded memory: once the kept text passes `max_chars`, later blocks are only measured (for the
    truncation note) and counted (for the footer), so a 1 GB event stream renders in constant memory.
    """
    builder = TranscriptBuilder(title, max_chars)
    for event in events:
        builder.add(event)
    return builder.markdown(max_chars, source)


class TranscriptBuilder:
    """`render_transcript` one event at a time, so a writer can build it as the events go out (EventSink does)
    instead of reading its JSONL back. It renders events until its body passes `keep_chars`; later events are
    only counted (the footer's totals, the truncation note), so a long stream costs little per event past the
    cap. `markdown(max_chars)` answers for any `max_chars <= keep_chars` exactly as a builder kept to
    `max_chars` would (tests/core/records/test_events.py): the body kept to a smaller cap is a prefix of this one, and
    the point where it would have stopped is known from the body's size after each event.
    """

    def __init__(self, title: str = "Transcript", keep_chars: int = TRANSCRIPT_MAX_CHARS,
                 counted: Counters | None = None) -> None:
        """`counted`: counters its owner keeps of the very same events (EventSink's), read instead of counting."""
        self.keep_chars = keep_chars
        self._counting = counted is None
        self.counters = Counters() if counted is None else counted
        self._blocks: list[str] = [f"### {title}"]
        self._phase: str | None = None
        self._stream: list[str] = []
        self._stream_chars = 0
        # Streamed text is kept to the largest cap whatever this builder's, so every cap sees the same text.
        self._stream_cap = max(keep_chars, TRANSCRIPT_MAX_CHARS)
        self._bullets_open = 0  # len(self._blocks) while the last block is a list of event bullets
        self._kept = len(self._blocks[0]) + 2  # characters of the body
        self._kept_after = array("q")  # the body's size after each event, until it passed keep_chars
        self._events = 0

    def add(self, event: Mapping[str, Any]) -> None:
        if self._counting:
            self.counters.count(event)
        self._events += 1
        if self._kept > self.keep_chars:
            return  # past the cap: counted only
        self._render(event)
        self._kept_after.append(self._kept)

    def _render(self, event: Mapping[str, Any]) -> None:
        kind = str(event.get("type"))
        phase = self._phase
        wanted = _PHASE_OF.get(kind) or (phase if phase and phase not in _CLOSED_PHASES else "Agent")
        if wanted != phase:
            self._flush_stream()
            self._phase = wanted
            self._add(f"#### {wanted}")
        if kind == "message_streamed":
            if self._stream_chars <= self._stream_cap:
                delta = str(event.get("delta") or "")
                self._stream.append(delta)
                self._stream_chars += len(delta)
            return
        self._flush_stream()
        rendered = _render_event(event)
        if not rendered:
            return
        bullet = rendered.startswith("- ")
        merge = bullet and self._bullets_open == len(self._blocks)
        self._add(rendered, merge)  # consecutive bullets form one tight list
        self._bullets_open = len(self._blocks) if bullet else 0

    def _add(self, block: str, merge: bool = False) -> None:
        if self._kept > self.keep_chars:
            return
        if merge:
            self._blocks[-1] += "\n" + block
            self._kept += len(block) + 1
        else:
            self._blocks.append(block)
            self._kept += len(block) + 2 if block else 0

    def _flush_stream(self) -> None:
        if self._stream:
            self._add("".join(self._stream).strip())
            self._stream.clear()
            self._stream_chars = 0

    def markdown(self, max_chars: int | None = None, source: str | None = None) -> str:
        """The transcript of the events so far, at most `max_chars` (default and most: `keep_chars`)."""
        limit = self.keep_chars if max_chars is None else max_chars
        if limit > self.keep_chars:
            raise ValueError(f"kept to {self.keep_chars} characters; {limit} asked")
        blocks, kept = self._blocks, self._kept
        # Events a builder kept to `limit` would not have rendered: those after the one that took it past.
        seen = bisect_right(self._kept_after, limit)
        left_out = self._events - seen - 1 if seen < len(self._kept_after) else 0
        tail = "".join(self._stream).strip()  # a message still streaming ends the body, as a last block would
        if tail and kept <= self.keep_chars:
            blocks, kept = [*blocks, tail], kept + len(tail) + 2
        counters = self.counters
        footer = ("---\n\n"
                  f"messages: {counters.messages} · tool calls: {counters.tool_calls} · "
                  f"tokens in/out: {counters.tokens['input_tokens']}/{counters.tokens['output_tokens']} · "
                  f"cost: ${counters.cost_usd:.4f}\n")
        if source:
            footer += f"\nFull events (JSONL, relative to the packet): `{source}`\n"
        body = "\n\n".join(b for b in blocks if b) + "\n\n"
        if kept <= limit and len(body) + len(footer) <= limit:
            return body + footer
        room = max(0, limit - len(footer) - 120)
        cut = body.rfind("\n", 0, room)
        shown = cut if cut > 0 else room
        more = f", {left_out} more event{'' if left_out == 1 else 's'} not rendered" if left_out else ""
        note = (f"\n\n_[transcript truncated: {shown} characters shown{more}; "
                "the full events are in the JSONL named below]_\n\n")
        return body[:shown] + note + footer
