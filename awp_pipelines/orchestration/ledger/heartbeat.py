"""Liveness that holds across hosts: a running Attempt's compute beats in the instance; a silent one is dead.

Dagster's run monitoring asks the run launcher whether a run's worker lives. The Celery launcher answers
from the task's state in the result backend, and a worker killed with `kill -9` (or a host that lost power)
leaves its task STARTED forever: the run stays STARTED and holds its work tree and account slots. So each
prompt compute, while it runs, writes a beat (time, host, pid, every how often) to the instance's key-value
table every `AWP_HEARTBEAT_S` seconds, from a thread of its own. The recovery sensor (and the next `awp run`)
fails the packet's unfinished runs whose beat is older than its bound and frees their slots, so the retry is
launched on a live worker. The beat is removed when the compute ends. The run worker beats too, for the whole
run (step_executor.py): a run waiting between steps (for a pool slot, say) is alive while its worker is, and a
worker killed before any compute began is noticed as well.

The bound is in the beat (`4 x every + 10 s`): the writer, not the reader, says how often it beats. Beats
are stamped with the writer's clock: hosts need synchronized clocks (NTP) well within that bound.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Protocol

from dagster import DagsterInstance, DagsterRun, RunsFilter

from awp_pipelines.core.engine.hosts import host_id
from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.dagster_compat.kvs import kv_delete, kv_prefixed, kv_set
from awp_pipelines.dagster_compat.pools import free_run_slots
from awp_pipelines.orchestration.ledger.run_states import UNFINISHED

DEFAULT_EVERY_S = 15.0
RUN_STEP = "(run)"  # the run worker's own beat, beside its computes' (step_executor.py): no step key has brackets


def every_s() -> float:
    """How often this process beats: `AWP_HEARTBEAT_S`, else 15 s (a dead worker is noticed within 70 s)."""
    try:
        value = float(os.environ.get("AWP_HEARTBEAT_S", "") or DEFAULT_EVERY_S)
    except ValueError:
        value = DEFAULT_EVERY_S
    return max(value, 0.5)


@dataclass(frozen=True)
class Beat:
    run_id: str
    step: str
    packet: str
    host: str
    pid: int
    at: float  # epoch seconds, the writer's clock
    every: float

    @property
    def key(self) -> str:
        return f"{tags.HEARTBEAT_KEY}{self.run_id}/{self.step}"

    @property
    def of_run(self) -> bool:
        """The run worker's beat (step_executor.py), not a compute's."""
        return self.step == RUN_STEP

    @property
    def bound_s(self) -> float:
        """Four missed beats and some slack: a busy database or a paused VM is not a dead host."""
        return 4 * self.every + 10

    def silent_for(self, now: float) -> float:
        return now - self.at

    def stale(self, now: float) -> bool:
        return self.silent_for(now) > self.bound_s

    def why_reaped(self, now: float) -> str:
        """Why a run with this beat, stale, was failed."""
        return (f"its worker (pid {self.pid} on host {self.host}) has not beaten for {self.silent_for(now):.0f} s "
                f"(bound {self.bound_s:.0f} s): killed, or its host is gone")

    def dump(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def parse(cls, text: str) -> Beat | None:
        try:
            return cls(**json.loads(text))
        except (TypeError, ValueError):
            return None


def write_beat(instance: DagsterInstance, beat: Beat) -> None:
    kv_set(instance, {beat.key: beat.dump()})


def beats(instance: DagsterInstance) -> list[Beat]:
    """Every beat stored now (one per running prompt compute, on any host)."""
    return [beat for value in kv_prefixed(instance, tags.HEARTBEAT_KEY).values()
            if (beat := Beat.parse(value)) is not None]


class BeatStore(Protocol):
    """What `beating` needs of a ledger (`Ledger` has both; ledger.py imports this module, not the reverse)."""

    def beat(self, beat: Beat) -> None: ...

    def drop_beats(self, keys: Collection[str]) -> None: ...


@contextmanager
def beating(ledger: BeatStore, run_id: str, step: str, packet: str,
            every: float | None = None, on_beat: Callable[[], object] | None = None) -> Iterator[Beat]:
    """Beat for the block in `ledger`, from a daemon thread (the compute may block for hours in its agent). A
    failed write (the database briefly down) is skipped: the next one may succeed, and the bound allows for four.
    `on_beat`: also done at each beat after the first (the run worker repairs its pool queue: `repair_turns`)."""
    every = every or every_s()
    first = Beat(run_id, step, packet, host_id(), os.getpid(), time.time(), every)
    ledger.beat(first)
    done = threading.Event()

    def _beat() -> None:
        while not done.wait(every):
            try:
                ledger.beat(Beat(**{**asdict(first), "at": time.time()}))
                if on_beat is not None:
                    on_beat()
            except Exception:  # noqa: BLE001 - a beat is best effort; a missed one is what the bound is for
                continue

    thread = threading.Thread(target=_beat, name=f"awp-heartbeat-{run_id[:8]}", daemon=True)
    thread.start()
    try:
        yield first
    finally:
        done.set()
        thread.join(timeout=every + 5)
        # A beat left behind (the database down just now) belongs to an ended run: the next reap drops it.
        with contextlib.suppress(Exception):
            ledger.drop_beats([first.key])


def reap_silent_runs(instance: DagsterInstance, packet: str | None = None,
                     now: float | None = None) -> list[DagsterRun]:
    """Fail the unfinished runs (of `packet`, or of every packet) whose compute stopped beating (its worker or
    host died), and drop the beats of runs that have ended. Their pool slots (work tree, account) are freed at
    once: the retry waits for them. Two reads whatever the number of beats (the beats, then their live runs'
    ids) and a third when a beat is stale."""
    now = time.time() if now is None else now
    mine = [b for b in beats(instance) if packet is None or b.packet == packet]
    if not mine:
        return []
    # The live runs' ids alone (no run deserialised: 200 packets' live runs were most of a housekeeping tick),
    # then the runs themselves of the stale beats only.
    live = set(instance.get_run_ids(RunsFilter(run_ids=sorted({b.run_id for b in mine}), statuses=UNFINISHED)))
    stale = [b for b in mine if b.run_id in live and b.stale(now)]
    silent = {run.run_id: run for run in instance.get_runs(
        RunsFilter(run_ids=sorted({b.run_id for b in stale})))} if stale else {}
    reaped: list[DagsterRun] = []
    for beat in stale:
        run = silent.get(beat.run_id)
        if run is None or run in reaped:
            continue
        instance.report_run_failed(run, beat.why_reaped(now))
        reaped.append(run)
        # No grace as for a run that just ended (reaper.py): its compute has been silent past the bound.
        free_run_slots(instance, run.run_id)
    ended = {r.run_id for r in reaped} | ({b.run_id for b in mine} - live)
    kv_delete(instance, [b.key for b in mine if b.run_id in ended])
    return reaped
