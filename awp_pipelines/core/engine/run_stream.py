"""A packet run's activity as typed values, for the SDK (`awp.events`, `awp.run(on_event=…)`). No Dagster here.

The Attempts' JSONL event files (`<state>/events/<packet run>/<prompt>/<attempt>.jsonl`) are what every driver
writes, in process or in a run worker under the daemon, so the stream is read from them: `EventTail` follows
every file of a packet run as it grows (whole lines only: a line being written waits for its newline) and turns
the lines a dashboard wants into values. Attempt ends and the packet run's end come from the stored records
(the caller reads them: api.py), since the JSONL does not hold an Attempt's verdict.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from awp_pipelines.core.engine.progress import AttemptEnded, AttemptStarted
from awp_pipelines.core.records.usage import TOKEN_FIELDS, TokenCounts


@dataclass(frozen=True)
class AgentMessage:
    """A complete message of the agent."""

    prompt: str
    attempt: str
    text: str

    def line(self) -> str:
        return f"{self.attempt}: {self.text}"


@dataclass(frozen=True)
class ToolCall:
    """The agent called a tool (as it started)."""

    prompt: str
    attempt: str
    name: str
    input: Any
    call_id: str | None

    def line(self) -> str:
        return f"{self.attempt}: tool {self.name} {json.dumps(self.input, default=str)[:200]}"


@dataclass(frozen=True)
class TokensUsed:
    """A usage report of the agent's provider: the Attempt's running totals after it."""

    prompt: str
    attempt: str
    tokens: TokenCounts  # the counts defined once (core/records/usage.py)
    cost_usd: float

    def line(self) -> str:
        return (f"{self.attempt}: {self.tokens.input_tokens} tokens in, {self.tokens.output_tokens} out, "
                f"${self.cost_usd:.4f}")


@dataclass(frozen=True)
class PacketRunEnded:
    """The packet run ended: its state as `awp status` says it (completed, failed, blocked, stopped, …)."""

    packet_run: str
    state: str

    def line(self) -> str:
        return f"packet run {self.packet_run} ended {self.state}"


RunEvent = AttemptStarted | AttemptEnded | AgentMessage | ToolCall | TokensUsed | PacketRunEnded
EventListener = Callable[[RunEvent], None]


class EventTail:
    """Follows the event files under `root` (one packet run's), from their start; `poll()` gives what is new."""

    def __init__(self, root: Path, pattern: str = "*/*.jsonl", from_now: bool = False) -> None:
        """`pattern` under `root`: `*/*.jsonl` for one packet run's folder, `*/*/*.jsonl` for every packet run's;
        `from_now`: what the files hold already is passed over (a run about to start: only its own lines)."""
        self.root = Path(root)
        self.pattern = pattern
        self._offsets: dict[Path, int] = {f: f.stat().st_size for f in self._files()} if from_now else {}
        self._tokens: dict[str, TokensUsed] = {}  # attempt → its running totals
        self._started: set[str] = set()

    def poll(self) -> list[RunEvent]:
        out: list[RunEvent] = []
        for file in self._files():
            offset = self._offsets.get(file, 0)
            with file.open("rb") as fh:
                fh.seek(offset)
                data = fh.read()
            whole = data[:data.rfind(b"\n") + 1]
            self._offsets[file] = offset + len(whole)
            for line in whole.splitlines():
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                value = self._value(file.parent.name, event) if isinstance(event, dict) else None
                if value is not None:
                    out.append(value)
        return out

    def _files(self) -> list[Path]:
        return sorted(self.root.glob(self.pattern)) if self.root.is_dir() else []

    def _value(self, prompt: str, event: dict[str, Any]) -> RunEvent | None:
        kind, attempt = event.get("type"), str(event.get("attempt") or "")
        if kind == "run_started" and attempt not in self._started:  # a resume starts a session, not an Attempt
            self._started.add(attempt)
            return AttemptStarted(prompt, attempt, str(event.get("mode") or "run"), str(event.get("provider") or ""),
                                  event.get("model"), event.get("account"), "")
        if kind == "message_received":
            return AgentMessage(prompt, attempt, str(event.get("text") or ""))
        if kind == "tool_call_started":
            return ToolCall(prompt, attempt, str(event.get("name") or "tool"), event.get("input"), event.get("call_id"))
        if kind == "token_usage_updated":
            reported = TokenCounts.model_validate({k: int(event.get(k) or 0) for k in TOKEN_FIELDS})
            before = None if event.get("cumulative") else self._tokens.get(attempt)
            if before is not None:
                reported = TokenCounts.model_validate({k: getattr(before.tokens, k) + getattr(reported, k)
                                                       for k in TOKEN_FIELDS})
            cost = round((before.cost_usd if before else 0.0) + float(event.get("cost_usd") or 0.0), 6)
            self._tokens[attempt] = TokensUsed(prompt, attempt, reported, cost)
            return self._tokens[attempt]
        return None
