"""A budget survives crashes: 3 Attempts (retry budget 2, repair off), `kill -9` mid-Attempt 5 times with a
resume after each, then a last resume: the agent ran exactly 3 times, counted from its own side effect (each
execution appends a line to a file in a repo that is no target of the prompt, so no checkpoint or clean-up
touches it), and the AgentRun ends with its retries exhausted."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from reliability.crash import AWP, settled, spawn, wait_for, write_packet

KILLS = 5
BUDGET = 3  # the first Attempt and 2 retries


def executions(ledger: Path) -> int:
    runs = ledger / "runs.txt"
    return len(runs.read_text().splitlines()) if runs.exists() else 0


@pytest.mark.slow
def test_five_kills_and_resumes_run_the_agent_exactly_three_times(tmp_path: Path, make_git_repo,
                                                                   reliability_row) -> None:
    started = time.monotonic()
    counted = {"messages": ["working"], "writes": [{"repo": "ledger", "path": "runs.txt", "text": "ran\n",
                                                    "append": True}]}
    first = {"verify": {"files_exist": ["never.txt"]},  # the agent never satisfies it
             "simulate": {"attempts": [counted] * 10}}
    packet = write_packet(tmp_path / "budget", make_git_repo, first, repos=("ledger",),
                          recovery={"retry": {"max_attempts": 2, "base_delay_ms": 0},
                                    "repair": {"enabled": False}})
    ledger = packet / "ledger"
    # Each execution holds after the agent (its line written, before verify) until it is killed.
    env = {"AWP_FAULT_PAUSE": "after_agent:30"}
    packet_run: list[str] = []
    landed = 0
    for _ in range(KILLS):
        before = executions(ledger)
        proc = spawn(packet, *(["--packet-run", packet_run[0]] if packet_run else []), env=env)
        try:
            if wait_for(proc, lambda n=before: executions(ledger) > n):  # mid-Attempt: kill it there
                os.killpg(proc.pid, signal.SIGKILL)
                landed += 1
            proc.wait(timeout=60)  # else it ended by itself: the budget was spent, no Attempt ran
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)
        packet_run = packet_run or [p.name for p in (packet / ".awp" / "events").iterdir()]
    last = subprocess.run([AWP, "run", str(packet), "--packet-run", packet_run[0], "--json"], capture_output=True,
                          text=True, timeout=300)
    assert last.returncode == 1, last.stdout + last.stderr
    [outcome] = [o for o in json.loads(last.stdout)["prompts"] if o["prompt"] == "01"]
    ran = executions(ledger)
    assert ran == BUDGET and landed == BUDGET
    assert "retries exhausted (2)" in outcome["decision"], outcome
    assert (outcome["result"], outcome["failure_class"]) == ("provider_failed", "interrupted")
    state = settled(packet, packet_run[0], "01")
    lost = state.started - len(state.facts)  # started Attempts with neither a record nor a fact
    assert (state.started, lost) == (BUDGET, 0)
    reliability_row("kill -9 x5 mid-Attempt, budget of 3 Attempts", tries=KILLS, survived=KILLS, records_lost=lost,
                    commits_doubled=0, budget_overruns=ran - BUDGET, seconds=time.monotonic() - started,
                    note=f"agent ran {ran} times (counted by its own writes); {landed} kills landed mid-Attempt, "
                    f"{KILLS - landed} resumes found the budget spent")
