"""Ctrl-C reaches `awp run`, not Dagster's log mirrors.

In process, Dagster's local compute log manager mirrors each step's stdout and stderr to the terminal through
a `tail -F` and a Python orphan watcher (Dagster's compute_logs module), started in `awp run`'s own
process group: a terminal's Ctrl-C reached them too, and each watcher printed a `KeyboardInterrupt`
traceback. Started in a process group of their own they never see it; Dagster still ends them when the step
ends, and a watcher still ends its tail when `awp run` dies.
"""

from __future__ import annotations

import subprocess
from typing import Any


class _OwnGroupSubprocess:
    """The subprocess module as compute_logs sees it: every Popen in a process group of its own."""

    def __getattr__(self, name: str) -> Any:
        return getattr(subprocess, name)

    @staticmethod
    def Popen(*args: Any, **kwargs: Any) -> subprocess.Popen[Any]:  # noqa: N802 (the module's own name)
        kwargs.setdefault("process_group", 0)
        return subprocess.Popen(*args, **kwargs)


def keep_log_mirrors_out_of_the_terminal_group() -> None:
    """Idempotent; for the `awp run` process (a run worker under the daemon has no terminal). Patches a private
    module's attribute (imported here, not when AWP loads: a rename upstream fails this call, and its canary)."""
    from dagster._core.execution import compute_logs

    if not isinstance(compute_logs.subprocess, _OwnGroupSubprocess):
        compute_logs.subprocess = _OwnGroupSubprocess()  # type: ignore[assignment]
