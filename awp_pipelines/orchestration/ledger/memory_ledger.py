"""The ledger in one process's memory: the same promises as the instance's (ledger.py), held to them by the
same contract tests, so a scenario about AWP's decisions (a stop and its resume, a cooldown honoured, a dead
driver read as interrupted) runs under the real compute and sensor code as a fast test with no Dagster run. It
plays the instance's part for runs too: `add_run`, `log_event` and `end_run` stand for a launcher creating a run,
Dagster storing what its step logs, and Dagster ending it.

Every operation takes one lock: atomic among the threads of the process, which is all a memory can promise
(it shares nothing with another process, and a crash loses it all).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dagster import AssetKey, AssetMaterialization, AssetObservation, DagsterRun, DagsterRunStatus

from awp_pipelines.core.decisions.rotation import AccountUsage, Availability, Cooldown
from awp_pipelines.core.decisions.stops import StopMarker, StopState
from awp_pipelines.core.engine.attempt_record import AttemptRecord
from awp_pipelines.core.records import run_tags
from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.core.records.handoff_record import HandoffResult
from awp_pipelines.orchestration.compile.binding import PacketBinding
from awp_pipelines.orchestration.ledger.adoption import adopt_committed, settle_earlier_packet_runs
from awp_pipelines.orchestration.ledger.history import (
    FINISHED,
    UNFINISHED,
    PacketRunHistory,
    flat,
    history_of,
    joining_tags,
    latest_history,
    own_packet_run,
)
from awp_pipelines.orchestration.ledger.ledger import (
    AttemptEvent,
    AttemptLog,
    EndedRun,
    PacketRunEntry,
    pull_request_urls,
)
from awp_pipelines.orchestration.ledger.liveness import (
    OUTAGE_WHY,
    SLOT_GRACE_S,
    Beat,
    drivers_gone,
    keeps_slots,
    runner_alive,
    runner_gone,
    this_process,
    this_runner,
)


@dataclass
class _Run:
    run: DagsterRun
    updated_at: float = field(default_factory=time.time)  # its status or tags last changed, as Dagster's
    ended_at: float | None = None

    def add_tags(self, new: Mapping[str, str]) -> None:
        self.run = self.run.with_tags({**self.run.tags, **new})
        self.updated_at = time.time()


@dataclass
class MemoryLedger:
    runs: dict[str, _Run] = field(default_factory=dict)
    events: list[tuple[str, AssetKey, dict[str, object]]] = field(default_factory=list)  # (run id, asset, meta)
    kv: dict[str, str] = field(default_factory=dict)  # claims, runners, settled counts, packet index
    failures: dict[str, str] = field(default_factory=dict)  # run id → why it failed (fail_run)
    handoffs: dict[tuple[str, str], list[HandoffResult]] = field(default_factory=dict)  # (packet, packet run)
    event_at: dict[str, float] = field(default_factory=dict)  # run id → when its newest event was stored
    stops: dict[str, StopState] = field(default_factory=dict)
    cooldowns: dict[str, Cooldown] = field(default_factory=dict)
    usage: dict[str, AccountUsage] = field(default_factory=dict)
    beat_store: dict[str, Beat] = field(default_factory=dict)
    slots: dict[str, tuple[str, str]] = field(default_factory=dict)  # pool → (run id, holder): one slot each
    queue: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # pool → its waiters, oldest first
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)

    # --- runs: what Dagster does for the instance's ledger ---------------------------------------------------
    def add_run(self, packet_run: str | None, assets: Sequence[AssetKey] | None = None,
                status: DagsterRunStatus = DagsterRunStatus.STARTED, job_name: str = "__awp_memory__",
                tags: Mapping[str, str] | None = None, run_config: Mapping[str, Any] | None = None) -> str:
        """A run of `packet_run` (None: a run of one of Dagster's asset jobs, which joins none until claimed, or a
        run whose `tags` name its packet run), with the tags and config its launcher gave it."""
        run_id = str(uuid.uuid4())
        run = DagsterRun(job_name=job_name, run_id=run_id, status=status,
                         tags={**(tags or {}), **({run_tags.PACKET_RUN: packet_run} if packet_run else {})},
                         asset_selection=frozenset(assets) if assets else None, run_config=dict(run_config or {}))
        with self._lock:
            self.runs[run_id] = _Run(run)
            self.event_at[run_id] = time.time()
        return run_id

    def end_run(self, run_id: str, status: DagsterRunStatus = DagsterRunStatus.SUCCESS,
                at: float | None = None) -> None:
        with self._lock:
            entry = self.runs[run_id]
            if entry.run.status in UNFINISHED:
                entry.run = entry.run.with_status(status)
                entry.ended_at = entry.updated_at = time.time() if at is None else at
                self.event_at[run_id] = entry.ended_at  # Dagster logs the run's end as an event

    def log_event(self, run_id: str, event: object) -> None:
        """A step's own event (the compute's start marker, its Attempt's materialization or observation), stored
        in its run's log as Dagster stores what a step logs: what `history` reads back, as from an instance. A
        check's evaluation is kept apart by Dagster, and read by no operation here."""
        if not isinstance(event, AssetMaterialization | AssetObservation):
            return
        with self._lock:
            plain = {k: getattr(v, "value", v) for k, v in event.metadata.items()}
            self.events.append((run_id, event.asset_key, plain))
            self.event_at[run_id] = time.time()

    # --- the ledger's operations ----------------------------------------------------------------------------
    def history(self, packet_run: str, keys: Mapping[AssetKey, str]) -> PacketRunHistory:
        with self._lock:
            mine = [e for e in self.runs.values() if e.run.tags.get(tags.PACKET_RUN) == packet_run]
            runs = [e.run for e in mine]
            ids = {r.run_id for r in runs}
            events = [(run_id, key, dict(meta)) for run_id, key, meta in self.events
                      if run_id in ids and key in keys]
            # The instance reads run by run, each run's events in order: the same order here.
            order = {r.run_id: n for n, r in enumerate(runs)}
            events.sort(key=lambda e: order[e[0]])
            unfinished = [r.run_id for r in runs if r.status in UNFINISHED]
            gone = drivers_gone(unfinished, self.runners(unfinished), list(self.beat_store.values()),
                                time.time()) if unfinished else {}
            stopped = self.stop_state(packet_run).marker
            ended = {e.run.run_id: e.ended_at for e in mine if e.ended_at}
        return history_of(packet_run, runs, ended, events, keys,
                          lambda accounts: self.availability(accounts, int(time.time() * 1000)), stopped, gone)

    def record_started(self, run_id: str, key: AssetKey, marker: Mapping[str, object]) -> None:
        with self._lock:
            self.events.append((run_id, key, {k: v for k, v in marker.items() if v is not None}))
            self.event_at[run_id] = time.time()

    def record_attempt(self, run_id: str, key: AssetKey, record: AttemptRecord,
                       shown: Mapping[str, Any] | None = None, description: str | None = None) -> None:
        # What the page would show has no reader here: the record is what every reader reads.
        with self._lock:
            self.events.append((run_id, key, {tags.RECORD: record.stored()}))
            self.event_at[run_id] = time.time()

    def fail_run(self, run_id: str, why: str) -> None:
        with self._lock:
            if run_id in self.runs and self.runs[run_id].run.status in UNFINISHED:
                self.end_run(run_id, DagsterRunStatus.FAILURE)
                self.failures[run_id] = why

    def why_failed(self, run_id: str) -> str | None:
        with self._lock:
            entry = self.runs.get(run_id)
            if entry is None or entry.run.status != DagsterRunStatus.FAILURE:
                return None
            return self.failures.get(run_id, "")

    def latest_history(self, packet: str, keys: Mapping[AssetKey, str], prompt: str) -> PacketRunHistory | None:
        return latest_history(self, packet, keys, prompt)

    def last_event_at(self, run_ids: Collection[str]) -> dict[str, float]:
        with self._lock:
            return {run_id: self.event_at[run_id] for run_id in run_ids if run_id in self.event_at}

    def attempt_log(self, packet_run: str) -> AttemptLog:
        with self._lock:
            runs = [e.run for e in self.runs.values() if e.run.tags.get(tags.PACKET_RUN) == packet_run]
            events: dict[str, list[AttemptEvent]] = {run.run_id: [] for run in runs}
            for run_id, key, meta in self.events:
                if run_id in events:
                    events[run_id].append((key, flat(meta)))
            unfinished = [r.run_id for r in runs if r.status in UNFINISHED]
            gone = drivers_gone(unfinished, self.runners(unfinished), list(self.beat_store.values()), time.time())
        return AttemptLog(runs, events, gone)

    def run_events(self, run_id: str, cursor: str | None) -> tuple[list[AttemptEvent], str, bool]:
        start = int(cursor or 0)
        with self._lock:
            mine = [(key, flat(meta)) for r, key, meta in self.events if r == run_id]
        return mine[start:], str(len(mine)), False

    def recent_packet_runs(self, limit: int) -> list[PacketRunEntry]:
        with self._lock:
            noted = [(k.removeprefix(tags.PACKET_RUNS_KEY).rpartition("/"), int(v)) for k, v in self.kv.items()
                     if k.startswith(tags.PACKET_RUNS_KEY)]
        entries = [PacketRunEntry(packet, packet_run, at) for (packet, _, packet_run), at in noted]
        return sorted(entries, key=lambda e: e.at_ms, reverse=True)[:limit]

    def reap(self, packet: str | None = None, now: float | None = None) -> dict[str, str]:
        now = time.time() if now is None else now
        with self._lock:
            live = {e.run.run_id: e.run for e in self.runs.values() if e.run.status in UNFINISHED}
            why: dict[str, str] = {}
            if packet is not None:  # the runners of the packet's runs, as the next `awp run` of it judges them
                mine = set(self.packet_runs(packet))
                runners = self.runners([r for r, run in live.items() if run.tags.get(tags.PACKET_RUN) in mine])
                why |= {r: runner_gone(runner) for r, runner in runners.items() if not runner_alive(runner)}
            beats = [b for b in self.beat_store.values() if packet is None or b.packet == packet]
            for beat in beats:
                if beat.run_id in live and beat.run_id not in why and beat.stale(now):
                    why[beat.run_id] = beat.why_reaped(now)
            for run_id, reason in why.items():
                self.fail_run(run_id, reason)
                self.free_run_slots(run_id)
            self.drop_beats([b.key for b in beats if b.run_id in why or b.run_id not in live])
            return {run_id: live[run_id].tags.get(tags.PACKET_RUN, "") for run_id in why}

    def free_ended_slots(self, now: float | None = None) -> list[str]:
        cutoff = (time.time() if now is None else now) - SLOT_GRACE_S
        with self._lock:
            def keeps(run_id: str) -> bool:
                entry = self.runs.get(run_id)
                return entry is not None and keeps_slots(entry.run.status in UNFINISHED, entry.ended_at, cutoff,
                                                         tags.RUNNER_KEY + run_id in self.kv)

            ended = sorted(run_id for run_id in self.slot_holders() if not keeps(run_id))
            for run_id in ended:
                self.free_run_slots(run_id)
        return ended

    def close_run(self, run_id: str) -> None:
        with self._lock:
            self.fail_run(run_id, OUTAGE_WHY)  # only a run not ended: its end was never stored
            self.free_run_slots(run_id)

    def ended_runs(self, after: float, limit: int) -> list[EndedRun]:
        with self._lock:
            ended = [EndedRun(e.run, e.updated_at, e.ended_at) for e in self.runs.values()
                     if e.run.status in FINISHED and e.updated_at > after]
        return sorted(ended, key=lambda e: e.updated_at)[:limit]

    def join_run(self, run: DagsterRun, packet: str, packet_run: str) -> None:
        with self._lock:
            self.note_packet_run(packet, packet_run, int(time.time() * 1000))
            missing = {k: v for k, v in joining_tags(packet_run).items() if run.tags.get(k) != v}
            if missing and run.run_id in self.runs:
                self.runs[run.run_id].add_tags(missing)

    def claim_run(self, run_id: str, packet: str) -> DagsterRun | None:
        with self._lock:
            entry = self.runs.get(run_id)
            if entry is None or tags.PACKET_RUN in entry.run.tags:
                return entry.run if entry else None
            self.join_run(entry.run, packet, own_packet_run(entry.run))
            return entry.run

    def adopt(self, binding: PacketBinding, history: PacketRunHistory) -> list[str]:
        return adopt_committed(self, binding, history)

    def settle(self, binding: PacketBinding, new_packet_run: str) -> list[str]:
        return settle_earlier_packet_runs(self, binding, new_packet_run)

    def claim_attempt(self, attempt_id: str, run_id: str) -> str | None:
        key, me = tags.CLAIM_KEY + attempt_id, this_process(run_id)
        with self._lock:
            holder = self.kv.setdefault(key, me)
            if holder == me:
                return None
            holder_run = self.runs.get(holder.split(":", 1)[0])
            if holder_run is not None and holder_run.run.status in UNFINISHED:
                return holder
            self.kv[key] = me  # its run ended before it stored a start: taken over
            return None

    def note_runner(self, run_id: str) -> None:
        with self._lock:
            self.kv[tags.RUNNER_KEY + run_id] = this_runner()

    def runners(self, run_ids: Collection[str]) -> dict[str, str]:
        with self._lock:
            return {r: self.kv[tags.RUNNER_KEY + r] for r in run_ids if tags.RUNNER_KEY + r in self.kv}

    def beat(self, beat: Beat) -> None:
        with self._lock:
            self.beat_store[beat.key] = beat

    def beats(self) -> list[Beat]:
        with self._lock:
            return list(self.beat_store.values())

    def drop_beats(self, keys: Collection[str]) -> None:
        with self._lock:
            for key in keys:
                self.beat_store.pop(key, None)

    def stop_state(self, packet_run: str) -> StopState:
        with self._lock:
            return self.stops.get(packet_run, StopState())

    def stop_states(self, packet_runs: Collection[str]) -> dict[str, StopState]:
        with self._lock:
            return {p: self.stops.get(p, StopState()) for p in packet_runs}

    def stop(self, packet_run: str, marker: StopMarker) -> StopState:
        with self._lock:
            new = self.stop_state(packet_run).stop(marker)
            self.stops[packet_run] = new
            return new

    def resume(self, packet_run: str, at: float) -> StopMarker | None:
        with self._lock:
            old = self.stop_state(packet_run)
            self.stops[packet_run] = old.resume(at)
            return old.marker

    def rest(self, cooldown: Cooldown) -> None:
        with self._lock:
            self.cooldowns[cooldown.account] = cooldown

    def lift(self, account: str) -> Cooldown | None:
        with self._lock:
            return self.cooldowns.pop(account, None)

    def record_use(self, account: str, at_ms: int) -> AccountUsage:
        with self._lock:
            old = self.usage.get(account) or AccountUsage(account=account)
            self.usage[account] = AccountUsage(account=account, attempts=old.attempts + 1, last_used_ms=at_ms)
            return self.usage[account]

    def availability(self, accounts: Iterable[str], at_ms: int) -> Availability:
        wanted = set(accounts)
        with self._lock:
            return Availability(at_ms, {a: c for a, c in self.cooldowns.items() if a in wanted},
                                {a: u for a, u in self.usage.items() if a in wanted})

    def claim_slot(self, pool: str, run_id: str, holder: str) -> bool:
        me = (run_id, holder)
        with self._lock:
            waiting = self.queue.setdefault(pool, [])
            if self.slots.get(pool) == me:
                return True
            if pool not in self.slots and (not waiting or waiting[0] == me):  # free, and its turn
                self.slots[pool] = me
                if waiting:
                    waiting.pop(0)
                return True
            if me not in waiting:  # it waits in the pool's queue, and holds the pool as a waiter does
                waiting.append(me)
            return False

    def free_slot(self, run_id: str, holder: str) -> None:
        self._free(lambda held: held == (run_id, holder))

    def repair_turns(self, run_id: str) -> int:
        return 0  # a turn is taken at the waiter's claim, and a memory loses no commit: none is ever lost

    def free_run_slots(self, run_id: str) -> None:
        self._free(lambda held: held[0] == run_id)

    def _free(self, matches: Callable[[tuple[str, str]], bool]) -> None:
        with self._lock:
            for pool, held in list(self.slots.items()):
                if matches(held):
                    del self.slots[pool]
            for waiting in self.queue.values():
                waiting[:] = [w for w in waiting if not matches(w)]

    def slot_holders(self) -> set[str]:
        with self._lock:
            return {run_id for run_id, _ in self.slots.values()} | {
                run_id for waiting in self.queue.values() for run_id, _ in waiting}

    def note_packet_run(self, packet: str, packet_run: str, at_ms: int) -> None:
        with self._lock:
            self.kv[f"{tags.PACKET_RUNS_KEY}{packet}/{packet_run}"] = str(at_ms)

    def packet_runs(self, packet: str) -> list[str]:
        prefix = f"{tags.PACKET_RUNS_KEY}{packet}/"
        with self._lock:
            noted = [(k.removeprefix(prefix), int(v)) for k, v in self.kv.items() if k.startswith(prefix)]
        return [p for p, _ in sorted(noted, key=lambda item: item[1], reverse=True)]

    def run_counts(self, packet_runs: Collection[str]) -> dict[str, int]:
        wanted = set(packet_runs)
        with self._lock:
            counts = Counter(e.run.tags.get(tags.PACKET_RUN) for e in self.runs.values())
        return {str(p): n for p, n in counts.items() if p in wanted}

    def settled(self, packet_runs: Collection[str]) -> dict[str, int]:
        with self._lock:
            return {p: int(self.kv[tags.SETTLED_KEY + p]) for p in packet_runs if tags.SETTLED_KEY + p in self.kv}

    def mark_settled(self, packet_run: str, runs: int) -> None:
        with self._lock:
            self.kv[tags.SETTLED_KEY + packet_run] = str(runs)

    def handoff(self, packet: str, packet_run: str) -> list[HandoffResult]:
        with self._lock:
            return list(self.handoffs.get((packet, packet_run), []))

    def keep_handoff(self, packet: str, packet_run: str, results: Sequence[HandoffResult]) -> None:
        urls = pull_request_urls(results)
        with self._lock:
            first = next((e for e in self.runs.values() if e.run.tags.get(tags.PACKET_RUN) == packet_run), None)
            if urls and first is not None:
                first.add_tags({tags.PULL_REQUEST: urls})
            self.handoffs[(packet, packet_run)] = list(results)
