"""A cancelled Attempt (the caller's interrupt raised mid-session) keeps its partial work as a checkpoint,
leaves the tree clean, and ends user_cancelled with its lifecycle trail."""

from __future__ import annotations

import subprocess
import time
from dataclasses import replace
from pathlib import Path

from attempt_cancel_support import one_prompt_attempt

from awp_pipelines.core.engine.attempts import execute_attempt
from awp_pipelines.core.providers.base import ProviderOutcome, ProviderRequest
from awp_pipelines.core.records.events import EventSink


class Interrupted(BaseException):
    """Stands for Dagster's DagsterExecutionInterruptedError, which the pure engine never imports."""


class WritesThenIsCancelled:
    def run(self, request: ProviderRequest, sink: EventSink) -> ProviderOutcome:
        (request.repo_root() / "half.txt").write_text("partial work\n")
        raise Interrupted()

    def resume(self, request: ProviderRequest, sink: EventSink) -> ProviderOutcome:
        raise AssertionError("never resumed")


def test_a_cancelled_attempt_saves_its_partial_work_and_ends_user_cancelled(tmp_path: Path, make_git_repo) -> None:
    spec, repo = one_prompt_attempt(tmp_path, make_git_repo)
    sink = EventSink(tmp_path / "events.jsonl", "pr-1.01.a1")
    record = execute_attempt(spec, WritesThenIsCancelled(), sink, cancel_on=(Interrupted,))
    ended = [e for e in sink.events() if e["type"] in ("run_failed", "run_cancelled")]
    # A person's cancel is said as one: run_cancelled, carrying the envelope, never a run_failed.
    assert [(e["type"], e["failure_class"]) for e in ended] == [("run_cancelled", "user_cancelled")]
    assert record.result == "provider_failed" and record.failure and record.failure.failure_class == "user_cancelled"
    assert [t.state for t in record.transitions] == ["created", "provisioning", "running", "checkpointing", "terminal"]
    assert record.transitions[-1].cause == "cancellation"
    sha = record.wip["app"]
    shown = subprocess.run(["git", "-C", str(repo), "show", f"{sha}:half.txt"], capture_output=True, text=True)
    assert shown.stdout == "partial work\n"
    assert not (repo / "half.txt").exists()  # the tree is as clean as before the Attempt
    assert record.fact().failure_class == "user_cancelled"


# An agent CLI that spends as it works: OpenCode's JSON lines, one step of $0.004 every 50 ms for 10 s, after
# writing its partial work.
SPENDER = """#!/usr/bin/env python3
import json, time
open("half.txt", "w").write("partial work\\n")
for step in range(200):
    print(json.dumps({"type": "step_finish", "sessionID": "ses_spend", "part": {"type": "step-finish",
          "cost": 0.004, "tokens": {"input": 100, "output": 10, "reasoning": 0, "cache": {"read": 0, "write": 0}}}}),
          flush=True)
    time.sleep(0.05)
"""


def test_a_spend_cap_of_one_cent_stops_a_running_attempt_with_its_checkpoint(tmp_path: Path, make_git_repo) -> None:
    from awp_pipelines.core.decisions.budget import Budget, Spend
    from awp_pipelines.core.packet.model.budget import BudgetConfig
    from awp_pipelines.core.packet.providers_config import ProviderSpec
    from awp_pipelines.core.providers.opencode import OpenCodeAdapter

    spec, repo = one_prompt_attempt(tmp_path, make_git_repo)
    script = tmp_path / "spender"
    script.write_text(SPENDER)
    script.chmod(0o755)
    spec = replace(spec, budget=Budget(packet=BudgetConfig(max_cost_usd=0.01), packet_spent=Spend(0.002, 0)))
    sink = EventSink(tmp_path / "events.jsonl", "pr-1.01.a1")
    started = time.monotonic()
    record = execute_attempt(spec, OpenCodeAdapter(ProviderSpec(kind="opencode", command=str(script))), sink)
    assert time.monotonic() - started < 6  # stopped at the crossing, not after the CLI's 10 s
    assert record.failure is not None and record.failure.failure_class == "budget_exhausted"
    assert "$0.01 cap" in record.failure.message
    steps = [e for e in sink.events() if e["type"] == "token_usage_updated"]
    # $0.002 before it + 2 steps = $0.010: the second step reaches the cap, and no third step is counted.
    assert len(steps) == 2 and record.usage.cost_usd == 0.008
    assert record.transitions[-1].cause == "policy_denial"
    assert subprocess.run(["git", "-C", str(repo), "show", f"{record.wip['app']}:half.txt"], capture_output=True,
                          text=True).stdout == "partial work\n"
    assert not (repo / "half.txt").exists()
    assert record.fact().failure_class == "budget_exhausted" and not record.fact().retryable
