"""The sandbox's launcher (isolation/limiter.py) hands its command the default SIGTERM even when the runner
ignores it: a runner started in the background has SIGINT ignored, and Dagster's interrupt handling then leaves
SIGTERM ignored too (docs/upstream.md 8); an ignored signal stays ignored across exec, so the agent would only
ever end by SIGKILL."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from awp_pipelines.core.isolation import limiter


def test_the_launched_command_ends_on_sigterm_though_its_runner_ignores_it() -> None:
    report = "import signal; print(signal.getsignal(signal.SIGTERM) == signal.SIG_DFL)"
    launch = [sys.executable, "-I", "-S", "-c", Path(limiter.__file__).read_text(encoding="utf-8"), "--",
              sys.executable, "-c", report]
    ignoring = f"import signal, subprocess, sys; signal.signal(signal.SIGTERM, signal.SIG_IGN); " \
               f"sys.exit(subprocess.run({launch!r}).returncode)"
    done = subprocess.run([sys.executable, "-c", ignoring], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"
