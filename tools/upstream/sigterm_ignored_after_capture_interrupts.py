"""Dagster bug: leaving `capture_interrupts()` maps SIGTERM to SIGINT's handler, so a process whose SIGINT is
ignored (started in the background by a non-interactive shell, `cmd &`, as runbooks and CI scripts do) ends up
ignoring SIGTERM, and so does every child it starts afterwards (an ignored signal stays ignored across exec).

Runs on bare Dagster (no AWP): `python tools/upstream/sigterm_ignored_after_capture_interrupts.py`. Exit 0 and
"REPRODUCED" when, after one `capture_interrupts()` block in a process whose SIGINT is ignored, SIGTERM is
ignored too and a child started then survives `terminate()`; exit 1 otherwise.

Why: `capture_interrupts` restores SIGINT on exit through `_replace_interrupt_signal`, which then calls
`setup_interrupt_handlers()`: `signal.signal(SIGTERM, signal.getsignal(SIGINT))`. With SIGINT at SIG_IGN that
sets SIGTERM to SIG_IGN for good, in every process that executes a run in process (`execute_job`,
`materialize`, a run worker under a daemon started in the background). Seen in AWP's suite: after a test ran a
job in process, the xdist worker's later children (`git daemon`, a fake agent CLI, `sleep`) ignored SIGTERM.

Proposed fix: on exit, put SIGTERM back to what it was on entry, not to SIGINT's handler; map SIGTERM only where
it had the default action.
"""

from __future__ import annotations

import signal
import subprocess
import sys


def main() -> int:
    import dagster
    from dagster._utils.interrupts import capture_interrupts

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # as in a process a non-interactive shell started with `&`
    before = signal.getsignal(signal.SIGTERM)
    with capture_interrupts():  # what every in-process run execution enters and leaves
        pass
    after = signal.getsignal(signal.SIGTERM)
    print(f"dagster {dagster.__version__}: SIGTERM's handler {before} before the block, {after} after it")
    child = subprocess.Popen(["sleep", "30"])
    child.terminate()
    try:
        child.wait(timeout=3)
        survived = False
    except subprocess.TimeoutExpired:
        survived = True
        child.kill()
        child.wait()
    print(f"a child started after it {'survived' if survived else 'ended on'} SIGTERM")
    if after == signal.SIG_IGN and survived:
        print("REPRODUCED: a process whose SIGINT is ignored ignores SIGTERM once a capture_interrupts block ends, "
              "and so do the children it starts")
        return 0
    print("not reproduced: SIGTERM keeps its handler")
    return 1


if __name__ == "__main__":
    sys.exit(main())
