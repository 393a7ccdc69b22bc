"""Run one argv with a deadline, in its own process group so a timeout kills what it started too."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

# After the kill, how long to wait for the pipe to close before giving up on the rest of the output.
_DRAIN_SECONDS = 5.0


@dataclass(frozen=True)
class Finished:
    exit_code: int | None  # None when the deadline killed it
    output: str  # stdout and stderr, interleaved
    timed_out: bool


def run_bounded(argv: Sequence[str], cwd: Path, env: Mapping[str, str], timeout_ms: int) -> Finished:
    """Run `argv` (no shell). Raises OSError when it cannot be started at all."""
    proc = subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=timeout_ms / 1000)
        timed_out = False
    except subprocess.TimeoutExpired:
        _kill_group(proc.pid)
        try:
            out, _ = proc.communicate(timeout=_DRAIN_SECONDS)
        except subprocess.TimeoutExpired:  # a grandchild left the group and holds the pipe
            proc.kill()
            out = b""
        timed_out = True
    # Background children of a command that exited must not outlive the verification either.
    _kill_group(proc.pid)
    return Finished(None if timed_out else proc.returncode, out.decode("utf-8", errors="replace"), timed_out)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
