"""Agent control, as Prompt Runner's: the agent steers its own iterations from inside the session. Pure.

Each iteration (an Attempt in mode `iterate`, or a retry or repair of one) gets a fresh token and its own
request and progress files, handed to the agent through its environment. `awp agent-control
continue|repeat|finish|blocked` writes the request with an exclusive create, so the first request wins;
`awp agent-control progress` replaces the progress record atomically. The engine reads the request only
after the prompt's contract passed and its work was committed, and checks it against the iteration it
issued (token compared in constant time, iteration, prompt, packet run): anything else is
`invalid_request`. `finish` is accepted only when the packet's `completion_verify` passes.
"""

from __future__ import annotations

import hmac
import json
import os
import secrets
import stat
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from awp_pipelines.core.packet.model.control import AgentControlConfig

SCHEMA = "awp.agent_control.request.v1"
ENV_FILE = "AWP_AGENT_CONTROL_FILE"
ENV_PROGRESS = "AWP_AGENT_CONTROL_PROGRESS_FILE"
ENV_TOKEN = "AWP_AGENT_CONTROL_TOKEN"
ENV_RUN = "AWP_RUN_ID"
ENV_PROMPT = "AWP_PROMPT_ID"
ENV_ITERATION = "AWP_PROMPT_ITERATION"
# Prompt Runner's names for the same values, so its agents' instructions work unchanged.
_PROMPT_RUNNER_ENV = {
    ENV_FILE: "PROMPT_RUNNER_AGENT_CONTROL_FILE", ENV_PROGRESS: "PROMPT_RUNNER_AGENT_CONTROL_PROGRESS_FILE",
    ENV_TOKEN: "PROMPT_RUNNER_AGENT_CONTROL_TOKEN", ENV_RUN: "PROMPT_RUNNER_RUN_ID",
    ENV_PROMPT: "PROMPT_RUNNER_PROMPT_ID", ENV_ITERATION: "PROMPT_RUNNER_PROMPT_ITERATION"}
# Every variable of the control channel, under both names: the agent's environment lets exactly these through.
ENV_NAMES: tuple[str, ...] = (*_PROMPT_RUNNER_ENV, *_PROMPT_RUNNER_ENV.values())

Action = Literal["continue", "repeat", "finish", "blocked"]
ACTIONS: tuple[str, ...] = ("continue", "repeat", "finish", "blocked")
# What an iteration's directive came to: the request as accepted, the default action, or a rejection.
Outcome = Literal["continue", "repeat", "finish", "blocked", "finish_rejected", "invalid_request"]


class ControlError(Exception):
    """A request the agent-control command cannot make (no session, a request already made, bad input)."""


class ControlRequest(BaseModel):
    """The request file, as the agent-control command writes it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_: str = Field(alias="schema", description="Request format version.")
    token: str = Field(description="The iteration's token.")
    run_id: str = Field(description="The packet run.")
    prompt_id: str = Field(description="The prompt.")
    iteration: int = Field(description="The iteration the request is for.")
    action: Action = Field(description="continue, repeat, finish or blocked.")
    reason: str = Field("", description="Why; required for finish and blocked.")
    requested_at: str = Field(description="ISO time of the request.")


class ProgressRecord(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    token: str
    iteration: int
    cursor: str = ""
    unit: str = ""
    summary: str = ""
    updated_at: str


class Directive(BaseModel):
    """What one iteration's request came to (stored in its Attempt record; never the token)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    iteration: int
    max_iterations: int
    outcome: Outcome = Field(description="The action taken, or finish_rejected / invalid_request.")
    source: Literal["request", "default"] = Field(description="The agent's request, or the default action.")
    reason: str = Field("", description="The agent's reason, or why its request was rejected.")
    unmet: str = Field("", description="completion_verify's unmet items, when a finish was rejected.")
    progress: str = Field("", description="The agent's latest progress summary of this iteration.")

    def line(self) -> str:
        text = f"iteration {self.iteration}/{self.max_iterations}: {self.outcome} ({self.source})"
        return text + (f" — {self.reason}" if self.reason else "")


@dataclass(frozen=True)
class ControlHandle:
    """One iteration's handle: what the agent gets in its environment, and what its request must match."""

    token: str
    request_path: Path
    progress_path: Path
    run_id: str
    prompt_id: str
    iteration: int

    def env(self) -> dict[str, str]:
        values = {ENV_FILE: str(self.request_path), ENV_PROGRESS: str(self.progress_path), ENV_TOKEN: self.token,
                  ENV_RUN: self.run_id, ENV_PROMPT: self.prompt_id, ENV_ITERATION: str(self.iteration)}
        return {**values, **{_PROMPT_RUNNER_ENV[k]: v for k, v in values.items()}}


def iteration_of(modes: Sequence[str], mode: str) -> int:
    """The iteration an Attempt belongs to: each `iterate` Attempt starts one; a retry or repair continues
    the current one. `modes` are the AgentRun's earlier Attempts' modes."""
    return sum(1 for m in modes if m == "iterate") + (1 if mode == "iterate" else 0) or 1


def open_iteration(folder: Path, run_id: str, prompt_id: str, iteration: int) -> ControlHandle:
    """A fresh token and fresh files: a request left by an earlier Attempt is reset, never read."""
    folder.mkdir(parents=True, exist_ok=True)
    handle = ControlHandle(secrets.token_urlsafe(24), folder / "request.json", folder / "progress.json", run_id,
                           prompt_id, iteration)
    for path in (handle.request_path, handle.progress_path):
        path.unlink(missing_ok=True)
    return handle


def _env(env: Mapping[str, str], key: str) -> str:
    value = env.get(key) or env.get(_PROMPT_RUNNER_ENV[key])
    if not value:
        raise ControlError(f"{key} is not set: agent-control works only inside an agent-controlled session")
    return value


def make_request(env: Mapping[str, str], action: str, reason: str = "", *, token: str | None = None,
                 iteration: int | None = None, prompt_id: str | None = None) -> Path:
    """Write the request, exclusively: the first request of an iteration wins. The keyword overrides exist
    for the simulated provider's forged requests."""
    if action not in ACTIONS:
        raise ControlError(f"unknown action {action!r}: use one of {', '.join(ACTIONS)}")
    if action in ("finish", "blocked") and not reason.strip():
        raise ControlError(f"{action} needs a reason")
    path = Path(_env(env, ENV_FILE))
    request = {"schema": SCHEMA, "token": token if token is not None else _env(env, ENV_TOKEN),
               "run_id": _env(env, ENV_RUN), "prompt_id": prompt_id if prompt_id is not None else _env(env, ENV_PROMPT),
               "iteration": iteration if iteration is not None else int(_env(env, ENV_ITERATION)),
               "action": action, "reason": reason, "requested_at": _now()}
    try:
        with path.open("x", encoding="utf-8") as fh:
            json.dump(request, fh)
    except FileExistsError:
        raise ControlError(f"a request was already made for this iteration ({path}): the first one wins") from None
    return path


def record_progress(env: Mapping[str, str], summary: str, cursor: str = "", unit: str = "") -> Path:
    """Replace the progress record atomically (never a half-written file); progress is never terminal."""
    path = Path(_env(env, ENV_PROGRESS))
    record = ProgressRecord(token=_env(env, ENV_TOKEN), iteration=int(_env(env, ENV_ITERATION)), cursor=cursor,
                            unit=unit, summary=summary, updated_at=_now())
    fd, tmp = tempfile.mkstemp(prefix=".progress.", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(record.model_dump_json())
    os.replace(tmp, path)
    return path


def read_directive(handle: ControlHandle, config: AgentControlConfig) -> Directive:
    """The iteration's directive: its request checked against the handle, or the default action."""
    base: dict[str, Any] = {"iteration": handle.iteration, "max_iterations": config.max_iterations,
            "progress": _progress(handle)}
    if not handle.request_path.exists():
        return Directive(outcome=config.default_action, source="default", **base)
    try:
        request = ControlRequest.model_validate_json(_read_own(handle.request_path))
    except (ValidationError, ValueError, OSError) as err:
        return Directive(outcome="invalid_request", source="request", reason=f"malformed request: {_first(err)}",
                         **base)
    mismatch = _mismatch(request, handle)
    if mismatch:
        return Directive(outcome="invalid_request", source="request", reason=mismatch, **base)
    if request.action in ("finish", "blocked") and not request.reason.strip():
        return Directive(outcome="invalid_request", source="request", reason=f"{request.action} without a reason",
                         **base)
    return Directive(outcome=request.action, source="request", reason=request.reason, **base)


def _read_own(path: Path) -> str:
    """A file the agent wrote, never what it points at: the agent (in its sandbox) could leave a symlink to a file
    only the runner can read, whose text would come back to it in a malformed-request reason."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise OSError(f"{path.name} is not a regular file")
        return fh.read(1 << 20).decode("utf-8")


def _mismatch(request: ControlRequest, handle: ControlHandle) -> str | None:
    # Constant time: a forger learns nothing from how long the comparison took.
    if not hmac.compare_digest(request.token.encode(), handle.token.encode()):
        return "wrong token"
    if request.schema_ != SCHEMA:
        return f"unknown schema {request.schema_!r}"
    if request.iteration != handle.iteration:
        return f"wrong iteration: {request.iteration}, this is iteration {handle.iteration}"
    if request.prompt_id != handle.prompt_id:
        return f"wrong prompt: {request.prompt_id!r}, this is prompt {handle.prompt_id}"
    if request.run_id != handle.run_id:
        return f"wrong run: {request.run_id!r}"
    return None


@dataclass(frozen=True)
class Progress:
    """An agent's latest progress record, as shown; `stale` when it was written for another iteration (or
    with another token) than the one it is read for: reported as such, never dropped."""

    text: str
    iteration: int
    stale: bool

    def shown(self) -> str:
        return f"(stale: written for iteration {self.iteration}) {self.text}" if self.stale else self.text


def read_progress(path: Path, iteration: int, token: str | None = None) -> Progress | None:
    """The record at `path` (None when there is none, or it is unreadable), checked against the iteration
    (and the token, when the reader holds it)."""
    try:
        record = ProgressRecord.model_validate_json(_read_own(path))
    except (OSError, ValueError, ValidationError):
        return None
    stale = record.iteration != iteration or (
        token is not None and not hmac.compare_digest(record.token.encode(), token.encode()))
    text = " ".join(x for x in (record.cursor, record.unit, record.summary) if x)[:200]
    return Progress(text, record.iteration, stale)


def _progress(handle: ControlHandle) -> str:
    """The latest progress summary of this iteration; a record of another iteration (or token) is stale."""
    progress = read_progress(handle.progress_path, handle.iteration, handle.token)
    return progress.shown() if progress is not None else ""


def control_section(handle: ControlHandle, config: AgentControlConfig, previous: Directive | None) -> str:
    """Appended to the prompt: where the agent is, and how it steers."""
    text = (f"\n\n## Agent Control\n\nThis is iteration {handle.iteration} of at most {config.max_iterations}. "
            "When your work for this iteration is done and committed, say what comes next with one command "
            "(the first request wins):\n\n"
            "- `awp agent-control continue` — this prompt is done\n"
            "- `awp agent-control repeat --reason TEXT` — run another iteration\n"
            "- `awp agent-control finish --reason TEXT` — everything is done (checked by the completion contract)\n"
            "- `awp agent-control blocked --reason TEXT` — you cannot go on without a person\n\n"
            "Report progress at any time with `awp agent-control progress --summary TEXT`. "
            f"Without a request, the default is `{config.default_action}`.")
    if previous is not None and previous.outcome == "finish_rejected":
        text += ("\n\nYour last `finish` was rejected: the completion contract is not met yet.\n\n" + previous.unmet)
    return text


def _first(err: Exception) -> str:
    return str(err).splitlines()[0][:120] if str(err) else type(err).__name__


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")
