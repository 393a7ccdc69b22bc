"""Operator control, as Prompt Runner's `control steer|amend|relax`: a person steers a running AgentRun from
outside it. Pure: files under the state folder, no Dagster.

Each AgentRun has a folder, `<state>/operator/<packet run>/<prompt>/`:

- `session.json`: the Attempt whose agent session runs now (its process id, provider), while it runs;
- `requests/`: steers waiting for the session, one file each, consumed by the running Attempt;
- `log.jsonl`: append-only, every command and what came of it (queued, applied, refused), and each verdict
  of the contract (so an amendment says when it came: before any verify, after a failure, after a pass);
- `amendments.jsonl`: the contract changes in force for the AgentRun (amendments.py).

A steer changes *how* the agent works toward an unchanged contract: it never counts as evidence and never
touches a retry or repair budget; `recovery.max_steers` bounds it per AgentRun, and a steer past it is a logged
refusal, never a failure.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

OPERATOR_DIR = "operator"
Outcome = Literal["queued", "applied", "refused", "verified"]
# How a steer reaches the agent. No agent CLI AWP drives takes input once started (their prompt is an argument,
# stdin closed), so the session is ended at its next event and resumed, same provider session, with the steer.
Lane = Literal["resume"]
STEER_PROMPT = ("A person supervising this work sends you this message:\n\n{text}\n\nTake it into account and "
                "carry on with the task: what counts as done has not changed.")


class OperatorError(Exception):
    """A control command that cannot be carried out (no running session, bad input); the message says why."""


class SteerRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    text: str = Field(description="The message for the agent.")
    author: str = Field(description="Who sent it.")
    at: str = Field(description="ISO time it was sent.")


class Steer(BaseModel):
    """A steer as its Attempt records it: delivered to the session (or refused, and why)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    text: str
    author: str
    at: str
    lane: Lane = "resume"
    delivered: bool = Field(description="The session was resumed with it.")
    refused: str = Field("", description="Why it was not delivered (max_steers reached).")


class LogEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    at: str
    command: str = Field(description="steer, amend, relax or verify.")
    outcome: Outcome
    author: str = ""
    attempt: str | None = None
    detail: str = Field("", description="The steer's text, the amendment, the refusal's reason, the verdict.")
    passed: bool | None = Field(None, description="For a verify entry: whether the contract passed.")


class SessionMarker(BaseModel):
    """Which Attempt's agent session runs now, written by that Attempt's process."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    packet_run: str
    prompt: str
    attempt: str
    provider: str
    pid: int
    started_at: str


def operator_folder(state_root: Path, packet_run: str, prompt: str) -> Path:
    return Path(state_root) / OPERATOR_DIR / packet_run / prompt


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def author_default() -> str:
    return os.environ.get("AWP_AUTHOR") or os.environ.get("USER") or "operator"


def append_log(folder: Path, entry: LogEntry) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "log.jsonl").open("a", encoding="utf-8") as fh:
        fh.write(entry.model_dump_json() + "\n")


M = TypeVar("M", bound=BaseModel)


def read_lines(file: Path, model: type[M]) -> list[M]:
    """The records of an append-only JSONL file ([] when there is none)."""
    if not file.is_file():
        return []
    records = []
    for line in file.read_text(encoding="utf-8").splitlines():
        try:
            records.append(model.model_validate_json(line))
        except (ValidationError, ValueError):
            continue  # a torn last line: what was written whole still counts
    return records


def read_log(folder: Path) -> list[LogEntry]:
    return read_lines(folder / "log.jsonl", LogEntry)


# -- sessions ------------------------------------------------------------------------------------------------
@contextmanager
def session_running(folder: Path, marker: SessionMarker) -> Iterator[None]:
    """`session.json` for the block: the Attempt a steer reaches."""
    folder.mkdir(parents=True, exist_ok=True)
    file = folder / "session.json"
    file.write_text(marker.model_dump_json(), encoding="utf-8")
    try:
        yield
    finally:
        file.unlink(missing_ok=True)


def running_sessions(state_root: Path, packet_run: str | None = None, prompt: str | None = None) -> list[SessionMarker]:
    """The sessions running now under `state_root` (their process alive), oldest first."""
    base = Path(state_root) / OPERATOR_DIR
    found = []
    for file in sorted(base.glob(f"{packet_run or '*'}/{prompt or '*'}/session.json")):
        try:
            marker = SessionMarker.model_validate_json(file.read_text(encoding="utf-8"))
        except (OSError, ValidationError, ValueError):
            continue
        if _alive(marker.pid):
            found.append(marker)
    return sorted(found, key=lambda m: m.started_at)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# -- steering ------------------------------------------------------------------------------------------------
def steers_applied(folder: Path) -> int:
    return sum(1 for e in read_log(folder) if e.command == "steer" and e.outcome == "applied")


def submit_steer(folder: Path, text: str, author: str, max_steers: int) -> SteerRequest:
    """Queue a steer for the running session; refused (and logged) at once when the AgentRun's steers are spent."""
    if not text.strip():
        raise OperatorError("an empty steer: say what the agent should do differently")
    if steers_applied(folder) >= max_steers:
        reason = f"recovery.max_steers ({max_steers}) reached for this AgentRun"
        append_log(folder, LogEntry(at=now(), command="steer", outcome="refused", author=author, detail=reason))
        raise OperatorError(f"steer refused: {reason}; the run carries on unsteered")
    request = SteerRequest(id=f"{int(time.time() * 1000)}-{secrets.token_hex(3)}", text=text.strip(), author=author,
                           at=now())
    inbox = folder / "requests"
    inbox.mkdir(parents=True, exist_ok=True)
    tmp = inbox / f".{request.id}.tmp"
    tmp.write_text(request.model_dump_json(), encoding="utf-8")
    os.replace(tmp, inbox / f"{request.id}.json")  # whole, or not there
    append_log(folder, LogEntry(at=now(), command="steer", outcome="queued", author=author, detail=request.text))
    return request


class Steering:
    """The running Attempt's end of the channel: `poll()` says whether a steer waits (the session then ends at
    its next event), `take()` consumes it, within `max_steers`, and logs what came of it."""

    def __init__(self, folder: Path, attempt: str, max_steers: int) -> None:
        self.folder = folder
        self.attempt = attempt
        self.max_steers = max_steers
        self.steers: list[Steer] = []

    def _waiting(self) -> list[Path]:
        inbox = self.folder / "requests"
        return sorted(inbox.glob("*.json")) if inbox.is_dir() else []

    def poll(self) -> bool:
        return bool(self._waiting())

    def take(self) -> Steer | None:
        """The oldest waiting steer, delivered (None when none waits, or each was refused)."""
        for file in self._waiting():
            try:
                request = SteerRequest.model_validate_json(file.read_text(encoding="utf-8"))
            except (OSError, ValidationError, ValueError):
                file.unlink(missing_ok=True)
                continue
            file.unlink(missing_ok=True)
            if steers_applied(self.folder) >= self.max_steers:
                reason = f"recovery.max_steers ({self.max_steers}) reached for this AgentRun"
                self.steers.append(Steer(**request.model_dump(), delivered=False, refused=reason))
                append_log(self.folder, LogEntry(at=now(), command="steer", outcome="refused", author=request.author,
                                                 attempt=self.attempt, detail=reason))
                continue
            steer = Steer(**request.model_dump(), delivered=True)
            self.steers.append(steer)
            append_log(self.folder, LogEntry(at=now(), command="steer", outcome="applied", author=request.author,
                                             attempt=self.attempt, detail=request.text))
            return steer
        return None


def steer_prompt(steer: Steer) -> str:
    return STEER_PROMPT.format(text=steer.text)


def note_verdict(folder: Path, attempt: str, passed: bool) -> None:
    """A verify of the AgentRun's contract: what the timing of a later amendment is measured against."""
    append_log(folder, LogEntry(at=now(), command="verify", outcome="verified", attempt=attempt, passed=passed,
                                detail="passed" if passed else "failed"))


def target_folder(state_root: Path, packet_run: str | None, prompt: str | None, live: bool) -> Path:
    """The AgentRun a control command is for: the one whose session runs (the only one, or the one named);
    without a live session (`live` False: amend, relax), the named packet run's, else the newest AgentRun of
    `prompt` that ran under `state_root`."""
    sessions = running_sessions(state_root, packet_run, prompt)
    if len(sessions) == 1:
        return operator_folder(state_root, sessions[0].packet_run, sessions[0].prompt)
    if len(sessions) > 1:
        names = ", ".join(f"{s.prompt} ({s.attempt})" for s in sessions)
        raise OperatorError(f"several Attempts are running: {names}; name the prompt (and --packet-run)")
    if live:
        where = f"packet run {packet_run}" if packet_run else "this packet"
        raise OperatorError(f"no Attempt {'of prompt ' + prompt + ' ' if prompt else ''}is running in {where} "
                            f"(state folder {state_root}): a steer reaches a running session only")
    if prompt is None:
        raise OperatorError("name the prompt whose contract to change")
    if packet_run is not None:
        return operator_folder(state_root, packet_run, prompt)
    ran = sorted((Path(state_root) / OPERATOR_DIR).glob(f"*/{prompt}"), key=lambda f: f.stat().st_mtime)
    if not ran:
        raise OperatorError(f"prompt {prompt} has not run under {state_root}: name the packet run (--packet-run)")
    return ran[-1]
