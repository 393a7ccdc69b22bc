"""The plain-rerun column of the `kill -9` table: four of test_kill9.py's ten points, one per kind of state a
plain rerun must settle (nothing on disk yet, a dirty tree with its checkpoint, a commit without its record, an
AgentRun waiting for its retry), with a plain `awp run PACKET` as the rerun (a new packet run), not
`--packet-run`. Starting it settles the killed packet run: every commit has its completed record (adopted where
its process died before writing it) and no packet run reads `running` in `awp status` or `awp watch`, since
nothing drives the killed one any more."""

from __future__ import annotations

import json
import shlex
import subprocess
import time
from pathlib import Path

import pytest
from reliability.crash import AWP, dirty
from reliability.test_kill9 import POINTS

from awp_pipelines.core.packet.packet import load_packet
from awp_pipelines.core.packet.providers_config import load_catalog
from awp_pipelines.orchestration.assets import packet_assets
from awp_pipelines.orchestration.ledger.factory import ledger_of
from awp_pipelines.orchestration.ledger.instance import open_instance


def attempt_commits(repo: Path) -> list[str]:
    """The Attempt each commit of the work tree names in its AWP-Attempt trailer."""
    out = subprocess.run(["git", "-C", str(repo), "log", "--format=%(trailers:key=AWP-Attempt,valueonly)%x00"],
                         capture_output=True, text=True, check=True).stdout
    return [v.strip() for v in out.split("\0") if v.strip()]


def unrecorded_commits(packet: Path, commits: list[str]) -> list[str]:
    """The committed Attempts without a stored completed record in their own packet run."""
    binding = packet_assets(load_packet(packet), load_catalog(None)).binding
    instance = open_instance(packet)
    try:
        missing = []
        for attempt in commits:
            packet_run, prompt, _ = attempt.rsplit(".", 2)
            history = ledger_of(instance).history(packet_run, binding.keys).agent_runs.get(prompt)
            records = {r.identity.attempt_id: r.result for r in history.records} if history else {}
            if records.get(attempt) != "completed":
                missing.append(attempt)
        return missing
    finally:
        instance.dispose()


def views(packet: Path, packet_run: str) -> tuple[str, str]:
    """The packet run's state as `awp status` and `awp watch` say it."""
    status = subprocess.run([AWP, "status", str(packet), "--packet-run", packet_run, "--json"], capture_output=True,
                            text=True, timeout=120)
    watch = subprocess.run([AWP, "watch", str(packet), "--packet-run", packet_run, "--once", "--json"],
                           capture_output=True, text=True, timeout=120)
    return json.loads(status.stdout)["state"], json.loads(watch.stdout)["state"]


# The settling differs by the state left behind, not by the line killed: one point per state keeps the column's
# meaning at 4 end-to-end runs instead of 10 (test_kill9.py runs all ten with `--packet-run`).
PLAIN_RERUN_POINTS = ("agent mid-session", "agent done, before verify", "committed, before the record",
                      "retry backoff")


@pytest.mark.slow
@pytest.mark.parametrize("point", PLAIN_RERUN_POINTS)
def test_kill_9_then_plain_rerun_leaves_no_packet_run_behind(point: str, tmp_path: Path, make_git_repo,
                                                            reliability_row) -> None:
    started = time.monotonic()
    spec = POINTS[point]
    packet, killed = spec.kill(tmp_path / "crash", make_git_repo)

    rerun = subprocess.run([AWP, "run", str(packet), "--json"], capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    fresh = json.loads(rerun.stdout)
    assert fresh["packet_run"] != killed
    assert {o["prompt"]: o["result"] for o in fresh["prompts"]} == {"01": "completed", "02": "completed"}
    repo = packet / "workspace"
    assert not dirty(repo)

    commits = attempt_commits(repo)
    missing = unrecorded_commits(packet, commits)
    assert missing == []  # every commit has its completed record
    old = views(packet, killed)
    assert "running" not in old, old
    assert views(packet, fresh["packet_run"]) == ("completed", "completed")
    if point == "agent mid-session":  # the status's resume hint works pasted, from any folder
        text = subprocess.run([AWP, "status", str(packet), "--packet-run", killed], capture_output=True, text=True,
                              timeout=120, cwd=tmp_path.parent).stdout
        hint = shlex.split(text.split("resume: ", 1)[1].splitlines()[0])
        assert hint == ["awp", "resume", str(packet.resolve()), "--packet-run", killed]
        pasted = subprocess.run([AWP, *hint[1:], "--lift-only"], capture_output=True, text=True, timeout=120, cwd="/")
        assert pasted.returncode == 0, pasted.stdout + pasted.stderr
    reliability_row(f"kill -9: {point}, then a plain rerun", tries=1, survived=1, records_lost=len(missing),
                    seconds=time.monotonic() - started,
                    note=f"killed packet run reads {old[0]}; {len(commits)} commit(s), each recorded")
