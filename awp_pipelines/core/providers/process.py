"""The shared subprocess runner of the CLI adapters: one process group, stdout read line by line.

Bounded memory: stdout is read in chunks and split into lines as they arrive (an over-long line is cut,
never buffered whole); stderr goes to a temporary file of which only the tail is kept. Bounds: a
wall-clock deadline and an idle deadline (no line for N ms); on expiry, or when the line handler asks
to stop (a rate limit seen in the CLI's own retry events), the whole process group is killed.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal, NamedTuple

CHUNK_BYTES = 1 << 20
PIPE_BYTES = 1 << 20  # stdout's pipe buffer (Linux): a fast stream wakes the reader per MiB, not per 64 KiB
MAX_LINE_BYTES = 8 << 20  # a longer line is cut: a transcript never needs more, memory stays bounded
STDERR_TAIL_BYTES = 8192
KILL_GRACE_S = 2.0
KILL_CONFIRM_S = 5.0  # after SIGKILL: how long kill_group waits for the group to be gone
INTERRUPT_POLL_S = 0.25  # how often a session asks whether a person's steer waits (a directory listing)

Ended = Literal["exited", "deadline", "idle", "stopped", "launch_failed"]
STOP = "stop"  # returned by a line handler: end the session now


@dataclass(frozen=True)
class ProcessResult:
    ended: Ended
    exit_code: int | None
    stderr_tail: str
    elapsed_ms: int
    pgid: int | None
    lines: int
    launch_error: str | None = None


def kill_group(pgid: int, grace_s: float = KILL_GRACE_S) -> None:
    """SIGTERM the group, then SIGKILL whatever is left after `grace_s`, and wait (up to KILL_CONFIRM_S) until
    nothing of it runs: a killed process ends only once it is scheduled again, seconds later on a loaded host."""
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, KILL_CONFIRM_S)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        end = time.monotonic() + wait
        while time.monotonic() < end:
            if not group_alive(pgid):
                return
            time.sleep(0.05)


def group_alive(pgid: int) -> bool:
    """A live (non-zombie) process is in the group. A killed orphan stays a zombie until PID 1 reaps it,
    which some container inits never do, so /proc is asked where there is one."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    if not Path("/proc").is_dir():
        return True
    return any(p.group == pgid and p.state not in ("Z", "X") for p in process_stats())


class ProcStat(NamedTuple):
    pid: int
    state: str
    parent: int
    group: int
    session: int


def process_ids() -> Iterator[int]:
    """Every process's id, from /proc (none without one)."""
    proc = Path("/proc")
    if proc.is_dir():
        yield from (int(entry.name) for entry in proc.iterdir() if entry.name.isdigit())


def process_stat(pid: int) -> ProcStat | None:
    """One process's state and ids from /proc; None once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2:].split()  # after "pid (comm) ": state, ppid, pgrp, session, ...
    return ProcStat(pid, fields[0], int(fields[1]), int(fields[2]), int(fields[3])) if len(fields) > 3 else None


def process_stats() -> Iterator[ProcStat]:
    """Every process, from /proc (none without one)."""
    for pid in process_ids():
        stat = process_stat(pid)
        if stat is not None:
            yield stat


def _feed_stdin(stream: IO[bytes], text: str) -> None:
    try:
        stream.write(text.encode("utf-8"))
        stream.close()
    except (BrokenPipeError, OSError):
        pass  # the process ended or does not read stdin: nothing to do


class _Lines:
    """Splits a byte stream into lines as chunks arrive; a line longer than MAX_LINE_BYTES is cut there."""

    def __init__(self) -> None:
        self.pending = bytearray()
        self.cut = False  # the current line passed MAX_LINE_BYTES: drop the rest of it

    def feed(self, chunk: bytes) -> Iterator[str]:
        first, last = chunk.find(b"\n"), chunk.rfind(b"\n")
        if first < last and len(chunk) <= MAX_LINE_BYTES:
            # The lines between the first and the last newline are whole here and under the cap: one decode
            # for all of them (a newline is never inside a UTF-8 sequence, so each decodes as it would alone).
            yield from self._feed(chunk[:first + 1])
            yield from str(memoryview(chunk)[first + 1:last], "utf-8", "replace").split("\n")  # no copy to slice
            yield from self._feed(chunk[last + 1:])
        else:
            yield from self._feed(chunk)

    def _feed(self, chunk: bytes) -> Iterator[str]:
        start = 0
        while True:
            newline = chunk.find(b"\n", start)
            end = len(chunk) if newline < 0 else newline
            if not self.cut:
                # At most MAX_LINE_BYTES of a line, whether it came in one chunk or in many.
                room = MAX_LINE_BYTES - len(self.pending)
                self.pending += chunk[start:min(end, start + room)]
                self.cut = end - start > room
            if newline < 0:
                return
            line = self.pending.decode("utf-8", errors="replace")
            self.pending.clear()
            self.cut = False
            start = newline + 1
            yield line

    def rest(self) -> str | None:
        """The unterminated last line, if whole."""
        return self.pending.decode("utf-8", errors="replace") if self.pending.strip() and not self.cut else None


def run_streaming(argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], on_line: Callable[[str], object],
                  deadline_ms: int, idle_ms: int, stdin_text: str | None = None,
                  on_stderr: Callable[[str], object] | None = None,
                  on_chunk: Callable[[], object] | None = None,
                  clock: Callable[[], float] = time.monotonic,
                  interrupt: Callable[[], bool] | None = None) -> ProcessResult:
    """Run `argv` in its own session (process group); call `on_line` with each stdout line (no newline),
    and `on_stderr` with each stderr line (some CLIs report their silent retries only there); `on_chunk`
    once the lines of each stdout chunk read are handled. Only stdout counts as activity for the idle
    deadline. `interrupt`, asked about every INTERRUPT_POLL_S at most, ends the session (`stopped`) when it says so:
    a person's steer is waiting."""
    started = clock()
    try:
        proc = subprocess.Popen(list(argv), cwd=str(cwd), env=dict(env), start_new_session=True,
                                stdin=subprocess.PIPE if stdin_text is not None else subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as err:
        return ProcessResult("launch_failed", None, "", 0, None, 0, launch_error=f"{argv[0]}: {err}")
    pgid = proc.pid  # start_new_session: the child leads its own group
    if stdin_text is not None:
        threading.Thread(target=_feed_stdin, args=(proc.stdin, stdin_text), daemon=True).start()
    assert proc.stdout is not None and proc.stderr is not None
    _widen_pipe(proc.stdout.fileno())
    selector = selectors.DefaultSelector()
    for stream, name in ((proc.stdout, "out"), (proc.stderr, "err")):
        os.set_blocking(stream.fileno(), False)
        selector.register(stream.fileno(), selectors.EVENT_READ, name)
    out, err_lines = _Lines(), _Lines()
    tail = bytearray()
    lines = 0
    ended: Ended = "exited"
    last_event = started
    asked = started

    handler_stopped = False  # once `on_stderr` said STOP it hears no more lines (the drain after the kill)

    def read_stderr(fd: int) -> tuple[bool, bool]:
        """(eof, stop) after one read of stderr."""
        nonlocal handler_stopped
        try:
            chunk = os.read(fd, CHUNK_BYTES)
        except BlockingIOError:
            return False, False
        if not chunk:
            return True, False
        tail.extend(chunk)
        del tail[:-STDERR_TAIL_BYTES]
        if on_stderr is not None and not handler_stopped:
            for line in err_lines.feed(chunk):
                if line.strip() and on_stderr(line) == STOP:
                    handler_stopped = True
                    return False, True
        return False, False

    try:
        while True:
            now = clock()
            remaining = min(started + deadline_ms / 1000 - now, last_event + idle_ms / 1000 - now)
            if remaining <= 0:
                ended = "deadline" if now - started >= deadline_ms / 1000 else "idle"
                break
            stop = out_eof = False
            for key, _ in selector.select(timeout=min(remaining, 1.0)):
                if key.data == "err":
                    eof, stop = read_stderr(key.fd)
                    if eof:
                        selector.unregister(key.fd)
                    if stop:
                        break
                    continue
                try:
                    chunk = os.read(key.fd, CHUNK_BYTES)
                except BlockingIOError:
                    continue
                if not chunk:
                    out_eof = True  # the process closed stdout
                    break
                for line in out.feed(chunk):
                    lines += 1
                    if line.strip() and on_line(line) == STOP:
                        stop = True
                        break
                if on_chunk is not None:
                    on_chunk()
                last_event = clock()
                if stop:
                    break
            if not stop and interrupt is not None and clock() - asked >= INTERRUPT_POLL_S:
                asked = clock()
                stop = interrupt()
            if stop:
                ended = "stopped"
                break
            if out_eof:
                break
        rest = out.rest() if ended == "exited" else None
        if rest is not None:
            lines += 1
            if on_line(rest) == STOP:
                ended = "stopped"
    except BaseException:
        ended = "stopped"  # interrupted (a signal): the agent's whole group goes, not waited for
        raise
    finally:
        if ended != "exited":
            kill_group(pgid)
        exit_code = _wait(proc, clock, started, deadline_ms)
        selector.unregister(proc.stdout.fileno())
        _drain(selector, read_stderr)
        selector.close()
        if ended == "exited":
            kill_group(pgid, grace_s=0.5)  # children the agent left behind go with it
        proc.stdout.close()
        proc.stderr.close()
    return ProcessResult(ended, exit_code, tail.decode("utf-8", errors="replace"),
                         int((clock() - started) * 1000), pgid, lines)


def _widen_pipe(fd: int) -> None:
    """A larger pipe buffer where the platform has one (Linux's F_SETPIPE_SZ); the default 64 KiB elsewhere,
    or when the system's pipe-size limit refuses."""
    with contextlib.suppress(OSError):
        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), PIPE_BYTES)


def _drain(selector: selectors.BaseSelector, read_stderr: Callable[[int], tuple[bool, bool]],
           limit_s: float = 1.0) -> None:
    """What stderr still holds once the process is gone (bounded: a grandchild may keep it open)."""
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        keys = [k for k, _ in selector.select(timeout=0.1) if k.data == "err"]
        if not keys:
            return
        eof, _ = read_stderr(keys[0].fd)
        if eof:
            return


def _wait(proc: subprocess.Popen[bytes], clock: Callable[[], float], started: float, deadline_ms: int) -> int | None:
    """The exit code; a process that closed stdout but lingers past the deadline is killed."""
    remaining = max(0.1, started + deadline_ms / 1000 - clock())
    try:
        return proc.wait(timeout=remaining)
    except subprocess.TimeoutExpired:
        kill_group(proc.pid)
        return proc.wait()
