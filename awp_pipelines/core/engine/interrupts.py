"""An orderly stop on SIGINT or SIGTERM: the Attempt is recorded before the process exits. No Dagster here.

`awp run` holds a `Stop` for its whole life (`stopping()`). The first signal asks for the stop: the process
groups of its children (an agent CLI, a verifier command) get SIGTERM, and where the stop may cut in (an
agent's session, a backoff wait: `cut_in()`) `Interrupted` is raised; elsewhere (verify, commit, storing the
record) the work goes on to the next point that asks (`check()`), so no commit is half made and
no record half written. The Attempt then ends `interrupted` with its partial work checkpointed, and the runner
exits 128 + the signal's number. A second signal does not wait: the children's groups get SIGKILL and the
process exits at once (the next `awp run` reaps what is left, as after a crash).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from types import FrameType

from awp_pipelines.core.providers.process import process_stats

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(BaseException):
    """A signal asked this process to stop; raised where the stop may cut in. A BaseException, like
    KeyboardInterrupt, so no `except Exception` on the way swallows it."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(f"stopped by {self.name}")

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def kill_children(sig: int) -> None:
    """Signal the process group of each child of this process that leads a session of its own: an agent CLI,
    a verifier command (so a terminal's SIGINT never reached them). Read from /proc. Git commands (a
    commit, a checkpoint) run in a group of their own but not a session: they finish."""
    me = os.getpid()
    for child in process_stats():
        if child.parent == me and child.pid == child.session:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(child.group, sig)


class Stop:
    """This process's stop request: `signum` is the first signal received, None while none came."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self._cut_in = 0

    def check(self) -> None:
        """Raise `Interrupted` when a stop was asked for."""
        if self.signum is not None:
            raise Interrupted(self.signum)

    @contextlib.contextmanager
    def cut_in(self) -> Iterator[None]:
        """A block the stop may interrupt at any point (it raises `Interrupted` there, or on entry)."""
        self.check()
        self._cut_in += 1
        try:
            yield
        finally:
            self._cut_in -= 1

    def deliver(self, signum: int, _frame: FrameType | None = None) -> None:
        """The signal handler."""
        if self.signum is not None:  # the second signal: no more waiting
            kill_children(signal.SIGKILL)
            with contextlib.suppress(OSError):
                os.write(2, f"\nawp: {signal.Signals(signum).name} again: exiting now\n".encode())
            os._exit(128 + signum)
        self.signum = signum
        kill_children(signal.SIGTERM)
        if self._cut_in:
            raise Interrupted(signum)

    @contextlib.contextmanager
    def handling(self) -> Iterator[Stop]:
        """Route SIGINT and SIGTERM to `deliver` for the block (the main thread only: Python runs handlers
        there), then put the previous handlers back."""
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        previous = {sig: signal.getsignal(sig) for sig in SIGNALS}
        for sig in SIGNALS:
            signal.signal(sig, self.deliver)
        try:
            yield self
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


_current: Stop | None = None


def current() -> Stop | None:
    """The Stop of the `stopping()` block this process is in, if any."""
    return _current


@contextlib.contextmanager
def stopping() -> Iterator[Stop]:
    """A process-wide Stop for the block (`awp run`), its handlers installed."""
    global _current
    outer, _current = _current, Stop()
    try:
        with _current.handling() as stop:
            yield stop
    finally:
        _current = outer
