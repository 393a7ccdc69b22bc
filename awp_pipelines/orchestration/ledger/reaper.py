"""Runs whose `awp run` process died (kill -9, a crash, a lost machine) end here, on the next `awp run`.

An in-process run has no run worker for Dagster's run monitoring to watch, so a killed `awp run` leaves its
run STARTED forever, holding its pool slots (a work tree, an account lease). Each run `awp run` launches
is noted with its runner, host:pid:process start time, in the instance's key-value store (`awp/runner/<run
id>`: not a run tag, which the Runs list would show on every row); the next `awp run` of the packet (which holds the
packet's lock, so no live runner can be touched) marks those runs failed and frees their slots. The
Attempt they were running then counts as `interrupted` in the decision's history, and its partial work is
saved as a checkpoint of its AgentRun before anything else edits the tree.
"""

from __future__ import annotations

import time
from collections.abc import Collection

from dagster import DagsterInstance, DagsterRun, RunRecord, RunsFilter

from awp_pipelines.dagster_compat.pools import free_run_slots, slot_holders
from awp_pipelines.orchestration.ledger.heartbeat import reap_silent_runs
from awp_pipelines.orchestration.ledger.packet_index import runs_of_packet
from awp_pipelines.orchestration.ledger.run_states import UNFINISHED
from awp_pipelines.orchestration.ledger.runners import note_runner, runner_alive, runners_of, this_host, this_runner

__all__ = ["note_runner", "runner_alive", "runners_of", "this_host", "this_runner"]  # their home was here

OUTAGE_MARK = "the instance's database failed"  # how end_run words a run whose end could not be stored
OUTAGE_WHY = f"its end was never stored: {OUTAGE_MARK} during it"
# Dagster's own `free_slots_after_run_end_seconds` in the shipped configs.
SLOT_GRACE_S = 30.0


def runner_gone(runner: str) -> str:
    """Why a run whose `awp run` died was failed."""
    return f"its awp run process ({runner}) is gone: killed or crashed"


def reap_dead_runs(instance: DagsterInstance, packet: str, now: float | None = None) -> list[DagsterRun]:
    """Mark the packet's unfinished runs whose runner is gone failed, their slots freed (`Ledger.reap`). A runner
    on this host is judged by its pid; a run on another host (or a run worker's) by its compute's heartbeat."""
    unfinished = runs_of_packet(instance, packet, UNFINISHED)
    runners = runners_of(instance, [run.run_id for run in unfinished])
    reaped = [run for run in unfinished if run.run_id in runners and not runner_alive(runners[run.run_id])]
    for run in reaped:
        instance.report_run_failed(run, runner_gone(runners[run.run_id]))
        free_run_slots(instance, run.run_id)
    return reaped + reap_silent_runs(instance, packet, now)


def end_run(instance: DagsterInstance, run_id: str) -> None:
    """A run this process executed is over, however it ended: mark it failed if its end was never stored (the
    database was down when it ended), and free every slot it still holds (a step frees its own as it ends,
    which fails while the database is down)."""
    run = instance.get_run_by_id(run_id)
    if run is not None and run.status in UNFINISHED:
        instance.report_run_failed(run, OUTAGE_WHY)
    free_run_slots(instance, run_id)


def keeps_slots(unfinished: bool, ended_at: float | None, cutoff: float, by_awp_run: bool) -> bool:
    """Whether a run holding slots keeps them (the rule of every ledger): it has not ended, or the daemon
    launched it and it ended after `cutoff` (a run worker's step can outlive the run's end by a moment, so
    Dagster's run monitoring waits SLOT_GRACE_S before it frees their slots; so do we). An `awp run` run (one with
    a runner) has no such step: its slots go at once."""
    return unfinished or (not by_awp_run and (ended_at or 0) > cutoff)


def _keeps_slots(record: RunRecord | None, cutoff: float, in_process: Collection[str]) -> bool:
    """`keeps_slots` of a stored run; a run that no longer exists keeps nothing."""
    if record is None:
        return False
    run = record.dagster_run
    return keeps_slots(run.status in UNFINISHED, record.end_time, cutoff, run.run_id in in_process)


def free_slots_of_ended_runs(instance: DagsterInstance, now: float | None = None) -> list[str]:
    """Free the pool slots and queue entries held by runs that have ended (or no longer exist): nothing will ever
    free them without a daemon, and every later step of their pools would wait forever. The run ids freed.
    Two reads: the holders of every pool, then their runs (a third, their runners, when one just ended)."""
    holders = slot_holders(instance)  # a pending step (a queue entry) holds its pool too
    if not holders:
        return []
    records = {r.dagster_run.run_id: r for r in instance.get_run_records(RunsFilter(run_ids=sorted(holders)))}
    cutoff = (time.time() if now is None else now) - SLOT_GRACE_S
    just_ended = [r.dagster_run.run_id for r in records.values()
                  if r.dagster_run.status not in UNFINISHED and (r.end_time or 0) > cutoff]
    in_process = runners_of(instance, just_ended)  # no read when none ended within the grace
    ended = sorted(run_id for run_id in holders if not _keeps_slots(records.get(run_id), cutoff, in_process))
    for run_id in ended:
        free_run_slots(instance, run_id)
    return ended
