"""`kill -9` of `awp run` at ten points of an Attempt, each found by watching what the run stores (its JSONL
events, and for two points its Dagster runs and records), then a rerun of the same packet run. Nothing is
lost, nothing runs twice, no budget is overrun, the partial work is checkpointed, no run stays STARTED and
no slot stays held.

Where an event alone cannot hold the process at its point long enough to kill it there, the engine's
`AWP_FAULT_PAUSE` hook (attempts.fault_pause) sleeps at that point; the event says the process got there."""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from reliability.crash import (
    A_TXT,
    AWP,
    SLOW,
    Seen,
    checkpoint_refs,
    commits_per_prompt,
    dirty,
    event,
    kill_when,
    recorded,
    run_failed,
    settled,
    write_packet,
)

from awp_pipelines.orchestration.ledger.factory import ledger_of
from awp_pipelines.orchestration.ledger.instance import open_instance
from awp_pipelines.orchestration.views.attempt_pages import agent_run_attempts


@dataclass(frozen=True)
class Point:
    seen: Seen
    pause: str = ""  # AWP_FAULT_PAUSE: hold the process at the point
    dirty: bool = False  # the dead Attempt left uncommitted work in the tree
    checkpoint: bool = False  # a checkpoint ref exists after the rerun
    started: int = 2  # Attempts of 01 started in all (each counts against its budget)
    first: dict[str, Any] = field(default_factory=dict)  # 01's front matter
    recovery: dict[str, Any] = field(default_factory=dict)

    def kill(self, root: Path, make_git_repo) -> tuple[Path, str]:
        """The crash packet in `root`, its `awp run` killed at this point: (packet, the killed packet run)."""
        packet = write_packet(root, make_git_repo, self.first, self.recovery)
        return packet, kill_when(packet, self.seen, {"AWP_FAULT_PAUSE": self.pause} if self.pause else {})


# Attempt 1 writes half the work, then the provider fails (retryable, not a fallback); later ones finish.
FAILS_THEN_WORKS = {"attempts": [{"messages": ["half done"], "writes": [{"path": "half.txt", "text": "half\n"}],
                                  "error": {"kind": "provider_runtime_claim"}}, SLOW, SLOW]}
# An agent that works 8 s before it writes: a kill seen mid-session lands mid-session, however slow the machine.
MID = {"messages": ["writing a.txt"], "delay_ms": 8000, "writes": [A_TXT]}
_RESUMES = {"attempts": [{"messages": ["half done"], "writes": [{"path": "half.txt", "text": "half\n"}],
                          "error": {"kind": "transport_disconnect"}}, SLOW],
            "resume": {**MID, "messages": ["resuming"]}}
_SLOW_VERIFIER = {"files_exist": ["a.txt"], "commands": [{"exec": "sh", "args": ["-c", "sleep 5; test -f a.txt"],
                                                          "timeout_ms": 30000}]}
_NO_JITTER = {"retry": {"jitter": False, "base_delay_ms": 6000}}

POINTS = {
    "started, before the agent": Point(event("prompt_sent", ".01.a1"), "before_agent:8"),
    "agent mid-session": Point(event("message_received", ".01.a1"), first={"simulate": {"attempts": [MID, SLOW]}}),
    "file written, session resuming": Point(event("resume_started", ".01.a1"), dirty=True, checkpoint=True,
                                            first={"simulate": _RESUMES}),
    "agent done, before verify": Point(event("file_written", ".01.a1"), "after_agent:8", dirty=True,
                                       checkpoint=True),
    "verifier running": Point(event("files_changed", ".01.a1"), dirty=True, checkpoint=True,
                              first={"verify": _SLOW_VERIFIER}),
    "verified, before commit": Point(event("verifier_completed", ".01.a1", passed=True), "after_verify:8",
                                     dirty=True, checkpoint=True),
    "committed, before the record": Point(event("commit_created", ".01.a1"), "after_commit:8", started=1),
    "recorded, before the next prompt": Point(recorded("01"), "before_attempt@02:8", started=1),
    "retry backoff": Point(run_failed, checkpoint=True, first={"simulate": FAILS_THEN_WORKS},
                           recovery=_NO_JITTER),
    "second Attempt mid-session": Point(event("message_received", ".01.a2"), dirty=True, checkpoint=True,
                                        started=3, first={"simulate": {"attempts": [
                                            FAILS_THEN_WORKS["attempts"][0], MID, SLOW]}},
                                        recovery={"retry": {"jitter": False, "base_delay_ms": 200}}),
}


def _views_say_interrupted(packet: Path, packet_run: str) -> None:
    """`awp status --json`, `awp watch --json` and the Attempt's page agree: its driver is gone (liveness.py)."""
    watched = subprocess.run([AWP, "watch", str(packet), "--once", "--json"], capture_output=True, text=True,
                             timeout=120)
    reading = json.loads(watched.stdout)
    assert watched.returncode == 1 and reading["violations"] == ["not_running"]
    status = json.loads(subprocess.run([AWP, "status", str(packet), "--json"], capture_output=True, text=True,
                                       timeout=120, check=True).stdout)
    [first] = [p for p in status["prompts"] if p["prompt"] == "01"]
    assert (status["state"], first["state"], [a["result"] for a in first["attempts"]]) == (
        "interrupted", "interrupted", ["interrupted"])
    assert (reading["state"], reading["agent_runs"]["01"], reading["current"]) == ("interrupted", "interrupted", [])
    instance = open_instance(packet)
    try:
        [page] = agent_run_attempts(ledger_of(instance), f"{packet_run}.01")
    finally:
        instance.dispose()
    assert not page.running and page.driver_gone


@pytest.mark.slow
@pytest.mark.parametrize("point", list(POINTS))
def test_kill_9_then_rerun_loses_nothing_and_doubles_nothing(point: str, tmp_path: Path, make_git_repo,
                                                             reliability_row) -> None:
    started = time.monotonic()
    spec = POINTS[point]
    packet, packet_run = spec.kill(tmp_path / "crash", make_git_repo)
    repo = packet / "workspace"
    assert dirty(repo) == spec.dirty
    if point == "agent mid-session":  # what every view says before anyone reruns it: interrupted, all at once
        _views_say_interrupted(packet, packet_run)

    rerun = subprocess.run([AWP, "run", str(packet), "--packet-run", packet_run, "--json"], capture_output=True,
                           text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    outcomes = {o["prompt"]: o for o in json.loads(rerun.stdout)["prompts"]}
    assert {p: o["result"] for p, o in outcomes.items()} == {"01": "completed", "02": "completed"}

    commits = commits_per_prompt(repo)
    assert commits == {"01": 1, "02": 1}  # nothing committed twice
    assert not dirty(repo)
    first = settled(packet, packet_run, "01")
    # Every started Attempt is accounted for: recorded, or a fact (interrupted / adopted) that counts.
    lost = first.started - len(first.facts)
    overruns = max(0, first.started - spec.started)
    assert (lost, overruns, first.started) == (0, 0, spec.started)
    # The dead Attempt's partial work was saved before the tree was cleaned (and only where there was some).
    assert bool(checkpoint_refs(repo)) == spec.checkpoint
    reliability_row(f"kill -9: {point}, then rerun", tries=1, survived=1, records_lost=lost,
                    commits_doubled=sum(n - 1 for n in commits.values()), budget_overruns=overruns,
                    seconds=time.monotonic() - started,
                    note=f"{first.started} Attempt(s) of 01; no run left STARTED, no slot held")
