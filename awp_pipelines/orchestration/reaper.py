"""Runs whose `awp run` process died (kill -9, a crash, a lost machine) end here, on the next `awp run`.

An in-process run has no run worker for Dagster's run monitoring to watch, so a killed `awp run` leaves its
run STARTED forever, holding its pool slots (a work tree, an account lease). Each run `awp run` launches
carries `awp/runner` = host:pid:process start time; the next `awp run` of the packet (which holds the
packet's lock, so no live runner can be touched) marks those runs failed and frees their slots. The
Attempt they were running then counts as `interrupted` in the decision's history, and its partial work is
saved as a checkpoint of its AgentRun before anything else edits the tree.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from pathlib import Path

from dagster import DagsterInstance, DagsterRun, DagsterRunStatus, RunsFilter

from awp_pipelines import tags
from awp_pipelines.runlock import process_start_time
from awp_pipelines.workspace import WorkspaceError, discard_changes, head, save_checkpoint

RUNNER = tags.RUNNER
UNFINISHED = [DagsterRunStatus.QUEUED, DagsterRunStatus.NOT_STARTED, DagsterRunStatus.STARTING,
              DagsterRunStatus.STARTED, DagsterRunStatus.CANCELING]


def runner_tag() -> dict[str, str]:
    """This process, as its runs name it: host, pid and start time (a pid alone is reused)."""
    pid = os.getpid()
    return {RUNNER: f"{socket.gethostname()}:{pid}:{process_start_time(pid) or 0}"}


def runner_alive(value: str) -> bool:
    host, _, rest = value.partition(":")
    pid_text, _, start = rest.partition(":")
    if host != socket.gethostname() or not pid_text.isdigit():
        return True  # another machine's process: not ours to judge
    started = process_start_time(int(pid_text))
    return started is not None and str(started) == start


def reap_dead_runs(instance: DagsterInstance, packet: str) -> list[DagsterRun]:
    """Mark the packet's unfinished runs whose runner is gone failed, and free their slots."""
    reaped = []
    for run in instance.get_runs(RunsFilter(tags={tags.PACKET: packet}, statuses=UNFINISHED)):
        runner = run.tags.get(RUNNER)
        if runner is None or runner_alive(runner):
            continue
        instance.report_run_failed(run, f"its awp run process ({runner}) is gone: killed or crashed")
        if instance.event_log_storage.supports_global_concurrency_limits:
            instance.event_log_storage.free_concurrency_slots_for_run(run.run_id)
        reaped.append(run)
    return reaped


def checkpoint_interrupted(repos: Mapping[str, Path], agent_run: str, attempt: str) -> dict[str, str]:
    """Save a dead Attempt's partial work as its AgentRun's checkpoint and clean the tree, so no other
    prompt commits it; the AgentRun's next Attempt starts from it."""
    saved = {}
    for name, repo in repos.items():
        try:
            sha = save_checkpoint(repo, head(repo), f"refs/awp/checkpoints/{agent_run}/{attempt}",
                                  f"AWP checkpoint {attempt} (interrupted)")
            if sha:
                saved[name] = sha
                discard_changes(repo)
        except WorkspaceError:
            continue
    return saved

