"""Progress of an in-process run as values: what `awp run` prints and what the SDK's `run(on_progress=…)`
receives. The compute emits each event beside its log line (the line is the event's `line()`, so the run's
log and the listener say the same thing); only a listener in the same process hears it — `awp run` and the
SDK install one around their runs, a run worker under the daemon has none.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(frozen=True)
class AttemptStarted:
    """An Attempt's leases are held and its agent is about to start on this target."""

    prompt: str
    attempt: str
    mode: str
    provider: str
    model: str | None
    account: str | None
    reason: str

    def line(self) -> str:
        on = f" on account {self.account}" if self.account else ""
        why = f" — {self.reason}" if self.reason else ""  # read back from a step process's marker: no reason
        return f"Attempt {self.attempt} ({self.mode}): {self.provider}/{self.model}{on}{why}"


@dataclass(frozen=True)
class AttemptEnded:
    """An Attempt ended; its record is the stored truth (`result` is the record's)."""

    prompt: str
    attempt: str
    result: str

    def line(self) -> str:
        return f"Attempt {self.attempt} ended {self.result}"


@dataclass(frozen=True)
class AttemptNote:
    """Something decided about the next Attempt before it starts (a probe's answer)."""

    prompt: str
    number: int
    note: str

    def line(self) -> str:
        return f"Attempt {self.number} of {self.prompt}: {self.note}"


@dataclass(frozen=True)
class LaunchDecided:
    """The decision function launched the next Attempt of a prompt (retry, fallback, repair, iterate…)."""

    prompt: str
    number: int
    mode: str
    reason: str

    def line(self) -> str:
        return f"{self.prompt} → {self.mode}: {self.reason}"


@dataclass(frozen=True)
class LaunchWaiting:
    """Nothing is due: the next Attempt of a prompt waits until `due_at` (a backoff, or every account it may
    use resting until the first is back, up to an hour): said once per wait, so a quiet terminal is explained."""

    prompt: str
    number: int
    mode: str
    reason: str
    due_at: float

    def wait(self) -> str:
        """What waits, until when, and why: the line without its prompt (a printer heads it with its own)."""
        at = time.strftime("%H:%M:%S", time.localtime(self.due_at))
        return f"{self.mode} waits until {at} ({max(0, round(self.due_at - time.time()))} s): {self.reason}"

    def line(self) -> str:
        return f"{self.prompt} → {self.wait()}"


@dataclass(frozen=True)
class RunPlanned:
    """The run's plan is made: the selected prompts, in order, as (id, name), and a warning for each chosen
    prompt whose upstream is unfinished (it runs all the same). Comes before any Attempt."""

    prompts: tuple[tuple[str, str], ...]
    warnings: tuple[str, ...] = ()

    def line(self) -> str:
        return "prompts " + ", ".join(pid for pid, _ in self.prompts)


ProgressEvent = RunPlanned | AttemptStarted | AttemptEnded | AttemptNote | LaunchDecided | LaunchWaiting
Listener = Callable[[ProgressEvent], None]

_listener: ContextVar[Listener | None] = ContextVar("awp_progress_listener", default=None)


@contextmanager
def listening(listener: Listener | None) -> Iterator[None]:
    """Deliver the events emitted in this context (by the compute of in-process runs) to `listener`."""
    token = _listener.set(listener)
    try:
        yield
    finally:
        _listener.reset(token)


def emit(event: ProgressEvent) -> None:
    listener = _listener.get()
    if listener is not None:
        listener(event)
