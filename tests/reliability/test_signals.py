"""SIGTERM and SIGINT to `awp run` mid-Attempt stop it in order: the agent's process group is killed, the
Attempt's record is stored (failure class `interrupted`) and its partial work checkpointed before the process
exits 128 + the signal; its run has ended and its slots are free, with no other command run since. A rerun
then continues and completes, committing nothing twice. A second signal exits at once.

The agent is a real process (a `command` provider running a shell script in its own session, so only
`awp run` itself can end it); it counts its executions in a ledger outside the work tree."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from e2e_support import stored_attempts
from reliability.crash import (
    AWP,
    Seen,
    agent_packet,
    agent_pids,
    checkpoint_refs,
    dirty,
    event,
    rerun_completes,
    settled,
    spawn,
    wait_for,
    watched,
    write_packet,
)

from awp_pipelines.core.packet.packet import load_packet
from awp_pipelines.core.packet.providers_config import load_catalog
from awp_pipelines.core.providers.process import group_alive
from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.orchestration.assets import packet_assets
from awp_pipelines.orchestration.ledger.factory import ledger_of
from awp_pipelines.orchestration.ledger.history import decision_inputs
from awp_pipelines.orchestration.ledger.instance import open_instance


def stop_mid_attempt(packet: Path, providers: Path, signals: list[signal.Signals], between: Seen | None = None,
                     env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """Start `awp run`; once the agent wrote half its work, send it the signals, the later ones once `between`
    is seen; return the ended process. SIGINT goes to its process group, as a terminal's Ctrl-C does (the
    agent leads a session of its own: only `awp run` can stop it); SIGTERM to its pid, as `kill` does."""
    proc = spawn(packet, "--providers", str(providers), env=env)
    with watched(packet, proc) as watch:
        assert wait_for(proc, lambda: event("message_streamed", ".01.a1", delta="wrote half.txt\n")(watch))
        for number, sig in enumerate(signals):
            if number and between is not None:
                assert wait_for(proc, lambda: between(watch))
            (os.killpg if sig == signal.SIGINT else os.kill)(proc.pid, sig)
        proc.wait(timeout=60)  # the agent would hold for 60 s or more: the stop does not wait for it
    return proc


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=lambda s: s.name)
def test_a_signal_mid_attempt_records_it_checkpoints_it_and_the_rerun_completes(
        sig: signal.Signals, tmp_path: Path, make_git_repo, reliability_row) -> None:
    started = time.monotonic()
    packet, providers, ledger = agent_packet(tmp_path, make_git_repo)
    proc = stop_mid_attempt(packet, providers, [sig])
    stderr = proc.stderr.read().decode() if proc.stderr else ""
    [packet_run] = [p.name for p in (packet / ".awp" / "events").iterdir()]
    assert proc.returncode == 128 + sig, stderr
    # Exact about what was running, and no traceback of Dagster's (its orphan watcher printed two).
    assert f"stopped by {sig.name}: Attempt {packet_run}.01.a1 was running: recorded provider_failed, its partial " \
        "work checkpointed (app)" in stderr and f"--packet-run {packet_run}" in stderr, stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr
    status = subprocess.run([AWP, "status", str(packet), "--json"], capture_output=True, text=True, timeout=120)
    report = json.loads(status.stdout)
    assert (report["state"], report["stop"]["by"], report["stop"]["resumable"]) == ("stopped", sig.name, 2)
    assert [p["state"] for p in report["prompts"]] == ["stopped", "planned"]  # not failed: 01 goes on, then 02
    assert report["prompts"][1]["reason"] == "held: upstream 01 stopped"
    [agent] = agent_pids(ledger)
    assert not group_alive(agent)  # the agent's process group went with the stop

    # As the process left it, before any other command could reap anything: run ended, slots free, the
    # Attempt recorded as interrupted, its partial work in its checkpoint and out of the tree.
    first = settled(packet, packet_run, "01")
    assert [(f.number, f.failure_class) for f in first.facts] == [(1, "interrupted")] and first.started == 1
    [record] = stored_attempts(packet, packet_run)  # stored, not inferred
    assert record.failure is not None and record.failure.failure_class == "interrupted"
    assert f"stopped by {sig.name}" in record.failure.message and record.wip
    repo = packet / "workspace"
    assert not dirty(repo)
    [ref] = checkpoint_refs(repo)
    assert subprocess.run(["git", "-C", str(repo), "show", f"{ref}:half.txt"], capture_output=True, text=True,
                          check=True).stdout == "half\n"
    assert not (packet / ".awp" / "events" / packet_run / "02").exists()  # nothing after the stop started

    commits = rerun_completes(packet, providers, packet_run)
    assert commits == {"01": 1, "02": 1}
    assert len(agent_pids(ledger)) == 2
    reliability_row(f"{sig.name} mid-Attempt, then rerun", tries=1, survived=1, records_lost=0,
                    commits_doubled=sum(n - 1 for n in commits.values()), budget_overruns=0,
                    seconds=time.monotonic() - started,
                    note=f"exit {proc.returncode}; record stored as interrupted before exit; checkpoint kept")


@pytest.mark.slow
def test_a_second_signal_exits_at_once_and_the_rerun_still_completes(tmp_path: Path, make_git_repo,
                                                                     reliability_row) -> None:
    """The orderly stop is held (AWP_FAULT_PAUSE=stopping: as a slow checkpoint of a huge tree would) once it
    has begun (its `run_failed` event); a second SIGTERM then ends `awp run` at once. What is left is a
    crash's: the next run reaps it, and the Attempt still counts."""
    started = time.monotonic()
    packet, providers, ledger = agent_packet(tmp_path, make_git_repo)
    proc = stop_mid_attempt(packet, providers, [signal.SIGTERM, signal.SIGTERM], event("run_failed", ".01.a1"),
                            {"AWP_FAULT_PAUSE": "stopping:60"})
    stderr = proc.stderr.read().decode() if proc.stderr else ""
    assert proc.returncode == 128 + signal.SIGTERM and "SIGTERM again: exiting now" in stderr, stderr
    [agent] = agent_pids(ledger)
    assert not group_alive(agent)
    [packet_run] = [p.name for p in (packet / ".awp" / "events").iterdir()]
    commits = rerun_completes(packet, providers, packet_run)
    assert commits == {"01": 1, "02": 1}
    first = settled(packet, packet_run, "01")
    assert first.started == 2 and len(first.facts) == 2  # the first Attempt counts, as after a crash
    assert len(checkpoint_refs(packet / "workspace")) == 1  # its half, saved by the rerun's reaper
    reliability_row("SIGTERM twice mid-Attempt, then rerun", tries=1, survived=1, records_lost=0,
                    commits_doubled=sum(n - 1 for n in commits.values()), budget_overruns=0,
                    seconds=time.monotonic() - started, note="second signal: immediate exit; reaped on rerun")


@pytest.mark.slow
def test_a_signal_while_waiting_for_a_work_tree_ends_the_wait_and_no_attempt_counts(
        tmp_path: Path, make_git_repo) -> None:
    """The work tree's lease is held by a live run of another process; `awp run` waits for it, and a SIGTERM
    ends the wait at once. No Attempt started: none is stored or counted, the holder keeps its slot."""
    from dagster import DagsterRun, DagsterRunStatus
    from dagster._core.utils import make_new_run_id

    from awp_pipelines.dagster_compat.pools import ensure_pool
    from awp_pipelines.orchestration.compile.translator import repo_pools

    packet = write_packet(tmp_path / "p", make_git_repo)
    pool = repo_pools(load_packet(packet))["01"] + "_tree"
    instance = open_instance(packet)
    try:
        holder = make_new_run_id()  # a live run of this (live) process: no reaper frees it
        instance.add_run(DagsterRun(job_name="holder", run_id=holder, status=DagsterRunStatus.STARTED))
        ledger_of(instance).note_runner(holder)
        ensure_pool(instance, pool)
        assert instance.event_log_storage.claim_concurrency_slot(pool, holder, "holder").is_claimed
    finally:
        instance.dispose()
    proc = spawn(packet)
    with watched(packet, proc) as watch:
        def waiting() -> bool:
            runs = [r.run_id for r in watch.instance.get_runs() if r.run_id != holder]
            return any("waiting for it" in (e.message or "") for r in runs for e in watch.instance.all_logs(r))
        assert wait_for(proc, waiting)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)  # a bound against a hang: the wait polls every 0.1 s for the stop
    assert proc.returncode == 128 + signal.SIGTERM, proc.stderr.read().decode() if proc.stderr else ""
    instance = open_instance(packet)
    try:
        ours = [r for r in instance.get_runs() if r.run_id != holder]
        assert ours and all(r.status == DagsterRunStatus.FAILURE for r in ours)
        [packet_run] = {r.tags[tags.PACKET_RUN] for r in ours}
        binding = packet_assets(load_packet(packet), load_catalog(None)).binding
        [first] = decision_inputs(binding, ledger_of(instance).history(packet_run, binding.keys), ["01"])
        assert first.started == 0 and not first.facts  # the wait was no Attempt
        claimed = instance.event_log_storage.get_concurrency_info(pool).claimed_slots
        assert [slot.run_id for slot in claimed] == [holder]  # the holder's slot is untouched
    finally:
        instance.dispose()
