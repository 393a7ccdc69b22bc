"""The orderly stop on SIGINT/SIGTERM (interrupts.py), with real signals sent to this process: the first one
only asks (and cuts in where that is allowed), it ends the children's process groups, a second one exits at
once; and an Attempt stopped mid-session is recorded `interrupted` with its partial work checkpointed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from attempt_cancel_support import one_prompt_attempt

from awp_pipelines.core.engine.attempts import execute_attempt
from awp_pipelines.core.engine.interrupts import Interrupted, Stop, current, stopping
from awp_pipelines.core.providers.base import ProviderOutcome, ProviderRequest
from awp_pipelines.core.records.events import EventSink


def test_outside_a_cut_in_block_a_signal_only_asks_to_stop() -> None:
    with stopping() as stop:
        assert current() is stop
        os.kill(os.getpid(), signal.SIGTERM)
        assert stop.signum == signal.SIGTERM  # and the code went on
        with pytest.raises(Interrupted) as raised:
            stop.check()
    assert raised.value.exit_code == 128 + signal.SIGTERM
    assert current() is None


def test_a_cut_in_block_is_interrupted_by_the_signal_and_refused_once_stopped() -> None:
    with stopping() as stop:
        with pytest.raises(Interrupted) as raised, stop.cut_in():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(30)  # never reached to its end: the handler raises in it
        assert raised.value.name == "SIGINT"
        with pytest.raises(Interrupted), stop.cut_in():
            pass


def test_the_previous_handlers_come_back_after_the_block() -> None:
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    with stopping():
        assert signal.getsignal(signal.SIGTERM) != before[0]
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before


def test_the_stop_ends_the_process_groups_of_the_children() -> None:
    child = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        with stopping() as stop:
            os.kill(os.getpid(), signal.SIGTERM)
            # Delivered asynchronously (to any thread of this worker; Python runs the handler in the main one):
            # the block must not end before the handler has run.
            deadline = time.monotonic() + 30
            while stop.signum is None and time.monotonic() < deadline:
                time.sleep(0.01)
        assert child.wait(timeout=30) == -signal.SIGTERM
    finally:
        if child.poll() is None:
            child.kill()


def test_a_second_signal_exits_at_once() -> None:
    code = textwrap.dedent("""
        import os, signal, time
        from awp_pipelines.core.engine.interrupts import stopping
        with stopping():
            os.kill(os.getpid(), signal.SIGTERM)  # asks; the process goes on
            print("asked", flush=True)
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(30)
            print("not reached", flush=True)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 128 + signal.SIGTERM
    assert done.stdout == "asked\n" and "SIGTERM again: exiting now" in done.stderr


class WritesThenIsSignalled:
    """An agent that writes half its work, and is stopped by a real SIGTERM to this process mid-session."""

    def run(self, request: ProviderRequest, sink: EventSink) -> ProviderOutcome:
        (request.repo_root() / "half.txt").write_text("partial work\n")
        sink.message("wrote half.txt")
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(30)
        raise AssertionError("the stop cuts into the session")

    def resume(self, request: ProviderRequest, sink: EventSink) -> ProviderOutcome:
        raise AssertionError("never resumed")


def test_an_attempt_stopped_by_a_signal_ends_interrupted_with_its_partial_work_checkpointed(
        tmp_path: Path, make_git_repo) -> None:
    spec, repo = one_prompt_attempt(tmp_path, make_git_repo)
    with Stop().handling() as stop:
        record = execute_attempt(spec, WritesThenIsSignalled(), EventSink(tmp_path / "e.jsonl", "pr-1.01.a1"),
                                 stop=stop)
    assert record.result == "provider_failed" and record.failure is not None
    assert record.failure.failure_class == "interrupted" and record.failure.retryable
    assert "SIGTERM during the agent's session" in record.failure.message
    assert record.transitions[-1].cause == "cancellation" and record.messages == 1
    shown = subprocess.run(["git", "-C", str(repo), "show", f"{record.wip['app']}:half.txt"], capture_output=True,
                           text=True, check=True)
    assert shown.stdout == "partial work\n" and not (repo / "half.txt").exists()
