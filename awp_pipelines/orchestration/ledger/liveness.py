"""Whether a run that has not ended is still driven: the one rule every view reads (status, watch, the page,
the reaper), so a run whose driver is gone reads `interrupted` everywhere at once, before any rerun.

A run has not ended while Dagster says so, unless its driver is gone: the `awp run` process noted as its
runner on this host has died (its pid is gone, or reused by a process that started at another time), or
every beat its worker and computes left is past its bound (heartbeat.py: another host's runner, a run
worker). A run with no runner and no beat yet (queued, starting) is judged by Dagster's status alone.
Reading decides nothing and writes nothing: the next `awp run` or the recovery sensor ends such runs for good
(reaper.py, heartbeat.reap_silent_runs).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from pathlib import Path

from dagster import DagsterInstance, DagsterRun

from awp_pipelines.core.engine.runlock import live_holder
from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.dagster_compat.kvs import kv_prefixed
from awp_pipelines.orchestration.ledger.heartbeat import Beat
from awp_pipelines.orchestration.ledger.run_states import UNFINISHED
from awp_pipelines.orchestration.ledger.runners import runner_alive, runners_of, this_host


def gone_runs(instance: DagsterInstance, runs: Iterable[DagsterRun], now: float | None = None) -> dict[str, str]:
    """Run id → why its driver is gone, for the `runs` Dagster says have not ended. One read of the runners
    of those runs, and one of the beats when one of them has no runner on this host."""
    unfinished = [run.run_id for run in runs if run.status in UNFINISHED]
    if not unfinished:
        return {}
    runners = runners_of(instance, unfinished)
    needs_beats = any(not this_host(runners.get(run_id)) for run_id in unfinished)
    found = [b for value in kv_prefixed(instance, tags.HEARTBEAT_KEY).values()
             if (b := Beat.parse(value)) is not None] if needs_beats else []
    return drivers_gone(unfinished, runners, found, time.time() if now is None else now)


def drivers_gone(unfinished: Iterable[str], runners: Mapping[str, str], beats: Iterable[Beat],
                 now: float) -> dict[str, str]:
    """The rule itself, over what a ledger stored: run id → why, for those of the `unfinished` runs whose
    runner on this host is dead, or (no runner here) that beat and whose every beat is past its bound."""
    wanted = list(unfinished)
    gone = {run_id: f"its awp run process ({runners[run_id]}) is gone" for run_id in wanted
            if run_id in runners and not runner_alive(runners[run_id])}
    by_run: dict[str, list[Beat]] = {}
    for beat in beats:
        if beat.run_id in wanted and beat.run_id not in gone and not this_host(runners.get(beat.run_id)):
            by_run.setdefault(beat.run_id, []).append(beat)
    gone |= {run_id: f"its worker (pid {found[0].pid} on host {found[0].host}) has not beaten for "
                     f"{min(b.silent_for(now) for b in found):.0f} s (bound {found[0].bound_s:.0f} s)"
             for run_id, found in by_run.items() if all(b.stale(now) for b in found)}
    return gone


def driven_in_process(runners: Mapping[str, str], state_root: Path) -> bool:
    """An `awp run` (or SDK `run`) that launched some of a packet run's runs (`runners`: run id → runner, as
    `Ledger.runners` reads them) still drives them, holding the packet's lock: it decides and launches what
    comes next for their packet run itself, so the recovery sensor must not launch it a second time. A process
    that ran them and lives on without the lock (a notebook) drives nothing."""
    holder = live_holder(state_root, "packet")
    if holder is None:
        return False
    runner = f"{holder.host}:{holder.pid}:{holder.start_time or 0}"
    return runner in runners.values()
