"""Whether a run that has not ended is still driven: the one rule every view reads (status, watch, the page) and
every reap acts on, so a run whose driver is gone reads `interrupted` everywhere at once, before any rerun.

Two kinds of driver leave a sign in the ledger:
- an `awp run` process notes itself as the runner of each run it launches (host, pid and process start time, since
  a pid alone is reused), before the run exists: a process killed at its start is still noticed. On its own host
  its pid says whether it lives.
- a compute, and the run worker around it, beat while they run (`beating`): every `AWP_HEARTBEAT_S` seconds, from a
  thread of their own, a beat (time, host, pid, every how often) overwrites the last. Dagster's run monitoring asks
  the run launcher whether a worker lives, and the Celery launcher answers from a task state that a `kill -9`
  leaves STARTED for good; a beat past its bound (`4 x every + 10 s`: the writer says how often it beats) says the
  worker is dead. Beats carry the writer's clock: hosts need synchronized clocks (NTP) well within that bound.

A run with no runner and no beat yet (queued, starting) is judged by Dagster's status alone. Reading decides
nothing and writes nothing: `Ledger.reap` (the next `awp run`, the housekeeping sensor) ends such runs for good,
failing them with the words below and freeing their slots.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol

from awp_pipelines.core.engine.hosts import host_id
from awp_pipelines.core.engine.runlock import live_holder, process_start_time
from awp_pipelines.core.records import run_tags as tags

DEFAULT_EVERY_S = 15.0
RUN_STEP = "(run)"  # the run worker's own beat, beside its computes' (step_executor.py): no step key has brackets
OUTAGE_MARK = "the instance's database failed"  # how `Ledger.close_run` words a run whose end could not be stored
OUTAGE_WHY = f"its end was never stored: {OUTAGE_MARK} during it"
# Dagster's own `free_slots_after_run_end_seconds` in the shipped configs.
SLOT_GRACE_S = 30.0


# --- runners: the `awp run` process that drives a run ------------------------------------------------------------
def this_runner() -> str:
    """This process, as its runs name it: host, pid and start time (a pid alone is reused)."""
    pid = os.getpid()
    return f"{host_id()}:{pid}:{process_start_time(pid) or 0}"


def this_process(run_id: str) -> str:
    """An Attempt claim's holder: the run, then this process as `this_runner` names it."""
    return f"{run_id}:{this_runner()}"


def this_host(runner: str | None) -> bool:
    """Whether the runner (host:pid:start) runs on this host, where its pid says whether it lives."""
    return runner is not None and runner.partition(":")[0] == host_id()


def runner_alive(value: str) -> bool:
    host, _, rest = value.partition(":")
    pid_text, _, start = rest.partition(":")
    if host != host_id() or not pid_text.isdigit():
        return True  # another machine's process: its beats judge it
    started = process_start_time(int(pid_text))
    return started is not None and str(started) == start


def runner_gone(runner: str) -> str:
    """Why a run whose `awp run` died was failed."""
    return f"its awp run process ({runner}) is gone: killed or crashed"


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


# --- beats: a compute's and a run worker's sign of life ---------------------------------------------------------
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


# --- the rule -----------------------------------------------------------------------------------------------------
def drivers_gone(unfinished: Iterable[str], runners: Mapping[str, str], beats: Iterable[Beat],
                 now: float) -> dict[str, str]:
    """Run id → why, for those of the `unfinished` runs whose runner on this host is dead, or (no runner here)
    that beat and whose every beat is past its bound."""
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


def keeps_slots(unfinished: bool, ended_at: float | None, cutoff: float, by_awp_run: bool) -> bool:
    """Whether a run holding slots keeps them (the rule of every ledger): it has not ended, or the daemon
    launched it and it ended after `cutoff` (a run worker's step can outlive the run's end by a moment, so
    Dagster's run monitoring waits SLOT_GRACE_S before it frees their slots; so do we). An `awp run` run (one with
    a runner) has no such step: its slots go at once."""
    return unfinished or (not by_awp_run and (ended_at or 0) > cutoff)
