"""The ledger's promises (ledger.py) kept in a Dagster instance, SQLite or PostgreSQL.

Where each part lives in the instance:
- a packet run's history: its runs (by the `awp/packet_run` tag) and the start markers and records in their event
  logs, read by the run-id index (one query per 500 runs on SQL storages), never by an asset's whole history;
- the key-value table (one JSON value a key): the packet index (`awp/packet_runs/<packet>/<packet run>`, when a run
  last joined it: runs carry only their packet-run tag, since the Runs list shows every tag on a line of its
  own), Attempt claims (a unique key: of two inserts one wins), `awp run`'s runners, beats, stops, cooldowns and
  uses of accounts, settled counts and hand-offs;
- the pools' slots and queues (a work tree's, an account's lease: `lease.py`), freed when a run ends;
- the runs themselves: a reap fails them as Dagster would (`report_run_failed`), a join tags them.

Only this module (and the instance's opening, instance.py) uses dagster_compat's state modules.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

from dagster import (
    AssetKey,
    AssetMaterialization,
    AssetObservation,
    DagsterEventType,
    DagsterInstance,
    DagsterRun,
    MetadataValue,
    RunRecord,
    RunsFilter,
)
from pydantic import BaseModel, ValidationError

from awp_pipelines.core.decisions.rotation import AccountUsage, Availability, Cooldown
from awp_pipelines.core.decisions.stops import StopMarker, StopState
from awp_pipelines.core.engine.attempt_record import AttemptRecord
from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.core.records.handoff_record import HandoffResult
from awp_pipelines.dagster_compat.events import (
    RECORD_EVENTS,
    attempt_events,
    latest_event_time,
    plain_value,
    report_materialization,
    report_observation,
    run_event_page,
)
from awp_pipelines.dagster_compat.kvs import kv_delete, kv_get, kv_insert, kv_prefixed, kv_set, kv_swap, kv_value
from awp_pipelines.dagster_compat.pools import (
    claim_slot,
    ensure_pool,
    free_run_slots,
    free_slot,
    pools_supported,
    repair_lost_turns,
    slot_holders,
)
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
    marker_metadata,
    own_packet_run,
)
from awp_pipelines.orchestration.ledger.ledger import (
    AttemptEvent,
    AttemptLog,
    EndedRun,
    PacketRunEntry,
    now_ms,
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
    this_host,
    this_process,
    this_runner,
)

M = TypeVar("M", bound=BaseModel)


class InstanceLedger:
    """The ledger in a Dagster instance. Made by factory.py only; every client is handed it as a `Ledger`."""

    def __init__(self, instance: DagsterInstance) -> None:
        self.instance = instance

    # --- a packet run's history -------------------------------------------------------------------------------
    def history(self, packet_run: str, keys: Mapping[AssetKey, str]) -> PacketRunHistory:
        records = self._packet_run_records(packet_run)
        runs = [r.dagster_run for r in records]
        ended = {r.dagster_run.run_id: r.end_time for r in records if r.end_time}
        return history_of(packet_run, runs, ended, attempt_events(self.instance, [run.run_id for run in runs], keys),
                          keys, lambda accounts: self.availability(accounts, now_ms()),
                          self.stop_state(packet_run).marker, self._gone(runs))

    def record_started(self, run_id: str, key: AssetKey, marker: Mapping[str, object]) -> None:
        report_observation(self.instance, run_id, self._job(run_id),
                           AssetObservation(asset_key=key, metadata=marker_metadata(marker)))

    def record_attempt(self, run_id: str, key: AssetKey, record: AttemptRecord,
                       shown: Mapping[str, Any] | None = None, description: str | None = None) -> None:
        metadata = dict(shown) if shown else {tags.RECORD: MetadataValue.json(record.stored())}
        report_materialization(self.instance, run_id, self._job(run_id),
                               AssetMaterialization(asset_key=key, description=description, metadata=metadata))

    def fail_run(self, run_id: str, why: str) -> None:
        run = self.instance.get_run_by_id(run_id)
        if run is not None and not run.is_finished:
            self.instance.report_run_failed(run, why)

    def why_failed(self, run_id: str) -> str | None:
        failures = self.instance.all_logs(run_id, of_type=DagsterEventType.RUN_FAILURE)
        return "\n".join(entry.message or "" for entry in failures) if failures else None

    def latest_history(self, packet: str, keys: Mapping[AssetKey, str], prompt: str) -> PacketRunHistory | None:
        return latest_history(self, packet, keys, prompt)

    def last_event_at(self, run_ids: Collection[str]) -> dict[str, float]:
        times = {run_id: latest_event_time(self.instance, run_id) for run_id in run_ids}
        return {run_id: at for run_id, at in times.items() if at is not None}

    def attempt_log(self, packet_run: str) -> AttemptLog:
        records = sorted(self._packet_run_records(packet_run), key=lambda r: r.create_timestamp)
        runs = [r.dagster_run for r in records]
        return AttemptLog(runs, {run.run_id: self._asset_events(run.run_id) for run in runs}, self._gone(runs))

    def run_events(self, run_id: str, cursor: str | None) -> tuple[list[AttemptEvent], str, bool]:
        records, after, more = run_event_page(self.instance, run_id, cursor)
        return [found for r in records if (found := _attempt_event(r.event_log_entry.dagster_event))], after, more

    def attempt_records(self, run_id: str) -> list[AttemptRecord]:
        """Every Attempt record one run stored, in order (not an operation of `Ledger`: the tests' reading)."""
        return [AttemptRecord.model_validate(meta[tags.RECORD]) for _, meta in self._asset_events(run_id)
                if isinstance(meta.get(tags.RECORD), dict)]

    def _packet_run_records(self, packet_run: str) -> list[RunRecord]:
        """The run records of the packet run, each once: Dagster's `add_run_tags` reads the run, then inserts the
        tags it lacked, so a run tagged by two writers at once gets the tag row twice and a tag filter (a join on
        the tags table) returns it twice (seen on 1.12's SQLite and 1.13's PostgreSQL)."""
        return list({r.dagster_run.run_id: r for r in
                     self.instance.get_run_records(RunsFilter(tags={tags.PACKET_RUN: packet_run}))}.values())

    def _asset_events(self, run_id: str) -> list[AttemptEvent]:
        """One run's materializations and observations, in order (Dagster's public per-run API)."""
        return [found for entry in self.instance.all_logs(run_id, of_type=set(RECORD_EVENTS))
                if (found := _attempt_event(entry.dagster_event))]

    def _gone(self, runs: Iterable[DagsterRun]) -> dict[str, str]:
        """Run id → why its driver is gone, for the `runs` Dagster says have not ended (liveness.py). One read of
        the runners of those runs, and one of the beats when one of them has no runner on this host."""
        unfinished = [run.run_id for run in runs if run.status in UNFINISHED]
        if not unfinished:
            return {}
        runners = self.runners(unfinished)
        needs_beats = any(not this_host(runners.get(run_id)) for run_id in unfinished)
        return drivers_gone(unfinished, runners, self.beats() if needs_beats else [], time.time())

    # --- reaping: runs whose driver is gone ---------------------------------------------------------------------
    def reap(self, packet: str | None = None, now: float | None = None) -> dict[str, str]:
        reaped = self._reap_dead_runners(packet) if packet else []
        reaped += self._reap_silent(packet, time.time() if now is None else now)
        return {run.run_id: run.tags.get(tags.PACKET_RUN, "") for run in reaped}

    def _reap_dead_runners(self, packet: str) -> list[DagsterRun]:
        """The packet's unfinished runs whose `awp run` on this host died (an in-process run has no run worker for
        Dagster's run monitoring to watch: a killed `awp run` leaves its run STARTED for good, holding its slots).
        The next `awp run` of the packet holds the packet's lock, so no live runner is touched."""
        unfinished = self.runs_of_packet(packet, UNFINISHED)
        runners = self.runners([run.run_id for run in unfinished])
        reaped = [run for run in unfinished if run.run_id in runners and not runner_alive(runners[run.run_id])]
        for run in reaped:
            self.instance.report_run_failed(run, runner_gone(runners[run.run_id]))
            free_run_slots(self.instance, run.run_id)
        return reaped

    def _reap_silent(self, packet: str | None, now: float) -> list[DagsterRun]:
        """The unfinished runs (of `packet`, or of every packet) whose compute stopped beating (its worker or host
        died), failed and their slots freed at once (the retry waits for them); the beats of ended runs dropped.
        Two reads whatever the number of beats (the beats, then their live runs' ids) and a third when one is
        stale: the live runs' ids alone, no run deserialised (200 packets' live runs were most of a tick)."""
        mine = [b for b in self.beats() if packet is None or b.packet == packet]
        if not mine:
            return []
        live = set(self.instance.get_run_ids(RunsFilter(run_ids=sorted({b.run_id for b in mine}),
                                                        statuses=UNFINISHED)))
        stale = [b for b in mine if b.run_id in live and b.stale(now)]
        silent = {run.run_id: run for run in self.instance.get_runs(
            RunsFilter(run_ids=sorted({b.run_id for b in stale})))} if stale else {}
        reaped: list[DagsterRun] = []
        for beat in stale:
            run = silent.get(beat.run_id)
            if run is None or run in reaped:
                continue
            self.instance.report_run_failed(run, beat.why_reaped(now))
            reaped.append(run)
            free_run_slots(self.instance, run.run_id)  # no grace: its compute has been silent past the bound
        ended = {r.run_id for r in reaped} | ({b.run_id for b in mine} - live)
        self.drop_beats([b.key for b in mine if b.run_id in ended])
        return reaped

    def free_ended_slots(self, now: float | None = None) -> list[str]:
        """Two reads: the holders of every pool (a pending step's queue entry holds its pool too), then their
        runs (a third, their runners, when one ended within the grace)."""
        if not pools_supported(self.instance):
            return []
        holders = slot_holders(self.instance)
        if not holders:
            return []
        records = {r.dagster_run.run_id: r for r in self.instance.get_run_records(RunsFilter(run_ids=sorted(holders)))}
        cutoff = (time.time() if now is None else now) - SLOT_GRACE_S
        just_ended = [r.dagster_run.run_id for r in records.values()
                      if r.dagster_run.status not in UNFINISHED and (r.end_time or 0) > cutoff]
        in_process = self.runners(just_ended)  # no read when none ended within the grace

        def keeps(record: RunRecord | None) -> bool:  # a run that no longer exists keeps nothing
            return record is not None and keeps_slots(record.dagster_run.status in UNFINISHED, record.end_time,
                                                      cutoff, record.dagster_run.run_id in in_process)

        ended = sorted(run_id for run_id in holders if not keeps(records.get(run_id)))
        for run_id in ended:
            free_run_slots(self.instance, run_id)
        return ended

    def close_run(self, run_id: str) -> None:
        run = self.instance.get_run_by_id(run_id)
        if run is not None and run.status in UNFINISHED:
            self.instance.report_run_failed(run, OUTAGE_WHY)
        self.free_run_slots(run_id)

    # --- runs that ended, and the packet run a run joins --------------------------------------------------------
    def ended_runs(self, after: float, limit: int) -> list[EndedRun]:
        # One query by status and update time (an index range that holds only what ended since), not one per
        # packet: on SQLite each run read opens an engine and reflects the runs table (~40 ms of CPU), and a
        # filter on the packet tag would walk the packet's whole history (1.6x slower at 10,000 past runs).
        records = self.instance.get_run_records(
            RunsFilter(statuses=list(FINISHED), updated_after=datetime.fromtimestamp(after, UTC)),
            limit=limit, order_by="update_timestamp", ascending=True)
        return [EndedRun(r.dagster_run, r.update_timestamp.timestamp(), r.end_time) for r in records]

    def join_run(self, run: DagsterRun, packet: str, packet_run: str) -> None:
        self.note_packet_run(packet, packet_run, now_ms())
        missing = {k: v for k, v in joining_tags(packet_run).items() if run.tags.get(k) != v}
        if missing:
            self.instance.add_run_tags(run.run_id, missing)

    def claim_run(self, run_id: str, packet: str) -> DagsterRun | None:
        stored = self.instance.get_run_by_id(run_id)  # fresh: the read a sensor tick shares may predate a claim
        if stored is None or tags.PACKET_RUN in stored.tags:
            return stored
        self.join_run(stored, packet, own_packet_run(stored))
        return self.instance.get_run_by_id(run_id) or stored

    # --- adoption and settling ----------------------------------------------------------------------------------
    def adopt(self, binding: PacketBinding, history: PacketRunHistory) -> list[str]:
        return adopt_committed(self, binding, history)

    def settle(self, binding: PacketBinding, new_packet_run: str) -> list[str]:
        return settle_earlier_packet_runs(self, binding, new_packet_run)

    # --- claims, runners, beats ---------------------------------------------------------------------------------
    def claim_attempt(self, attempt_id: str, run_id: str) -> str | None:
        # A run worker can be started twice for one run (Celery redelivers a task past its visibility timeout,
        # celery#5935; a pod restarts; a launcher retries), and both can pass Dagster's check while the run is
        # STARTING: the claim is a row whose key is unique, and of two inserting it one wins. A holder whose run
        # ended never started it (its start is stored right after the claim): taken over by compare-and-set.
        key, me = tags.CLAIM_KEY + attempt_id, this_process(run_id)
        if kv_insert(self.instance, key, me):
            return None
        holder = kv_value(self.instance, key)
        if holder == me:
            return None
        holder_run = self.instance.get_run_by_id(holder.split(":", 1)[0])
        if holder_run is not None and holder_run.status in UNFINISHED:
            return holder
        return None if kv_swap(self.instance, key, holder, me) else self.claim_attempt(attempt_id, run_id)

    def note_runner(self, run_id: str) -> None:
        kv_set(self.instance, {tags.RUNNER_KEY + run_id: this_runner()})

    def runners(self, run_ids: Collection[str]) -> dict[str, str]:
        if not run_ids:
            return {}
        stored = kv_get(self.instance, {tags.RUNNER_KEY + run_id for run_id in run_ids})
        return {key.removeprefix(tags.RUNNER_KEY): runner for key, runner in stored.items()}

    def beat(self, beat: Beat) -> None:
        kv_set(self.instance, {beat.key: beat.dump()})

    def beats(self) -> list[Beat]:
        return [b for v in kv_prefixed(self.instance, tags.HEARTBEAT_KEY).values() if (b := Beat.parse(v))]

    def drop_beats(self, keys: Collection[str]) -> None:
        kv_delete(self.instance, list(keys))

    # --- stop and resume ----------------------------------------------------------------------------------------
    def stop_state(self, packet_run: str) -> StopState:
        key = tags.STOP_KEY + packet_run
        return StopState.parse(kv_get(self.instance, {key}).get(key))

    def stop_states(self, packet_runs: Collection[str]) -> dict[str, StopState]:
        stored = kv_get(self.instance, {tags.STOP_KEY + p for p in packet_runs}) if packet_runs else {}
        return {p: StopState.parse(stored.get(tags.STOP_KEY + p)) for p in packet_runs}

    def stop(self, packet_run: str, marker: StopMarker) -> StopState:
        old = self.stop_state(packet_run)
        new = old.stop(marker)
        if new != old:
            kv_set(self.instance, {tags.STOP_KEY + packet_run: new.dump()})
        return new

    def resume(self, packet_run: str, at: float) -> StopMarker | None:
        old = self.stop_state(packet_run)
        kv_set(self.instance, {tags.STOP_KEY + packet_run: old.resume(at).dump()})
        return old.marker

    # --- accounts: cooldowns and use (JSON values: a restart remembers them, every process sees the same) -------
    def rest(self, cooldown: Cooldown) -> None:
        kv_set(self.instance, {tags.COOLDOWN_KEY + cooldown.account: cooldown.model_dump_json()})

    def lift(self, account: str) -> Cooldown | None:
        lifted = self._cooldowns([account]).get(account)
        if lifted is not None:
            kv_set(self.instance, {tags.COOLDOWN_KEY + account: "{}"})  # cleared, as a read skips
        return lifted

    def record_use(self, account: str, at_ms: int) -> AccountUsage:
        old = self._usage([account]).get(account) or AccountUsage(account=account)
        new = AccountUsage(account=account, attempts=old.attempts + 1, last_used_ms=at_ms)
        kv_set(self.instance, {tags.USAGE_KEY + account: new.model_dump_json()})
        return new

    def availability(self, accounts: Iterable[str], at_ms: int) -> Availability:
        wanted = sorted(accounts)
        return Availability(at_ms, self._cooldowns(wanted), self._usage(wanted)) if wanted else Availability(at_ms)

    def _cooldowns(self, accounts: Iterable[str]) -> dict[str, Cooldown]:
        return {c.account: c for c in self._models(tags.COOLDOWN_KEY, accounts, Cooldown)}

    def _usage(self, accounts: Iterable[str]) -> dict[str, AccountUsage]:
        return {u.account: u for u in self._models(tags.USAGE_KEY, accounts, AccountUsage)}

    def _models(self, prefix: str, accounts: Iterable[str], model: type[M]) -> list[M]:
        parsed = []
        for raw in kv_get(self.instance, {prefix + a for a in accounts}).values():
            try:
                parsed.append(model.model_validate_json(raw))
            except ValidationError:
                continue  # a cleared entry ("{}"), or one written by a newer version
        return parsed

    # --- leases (one holder per pool) ---------------------------------------------------------------------------
    def claim_slot(self, pool: str, run_id: str, holder: str) -> bool:
        if not pools_supported(self.instance):
            return True
        ensure_pool(self.instance, pool)  # asks the storage once per process, again after a failed claim
        return claim_slot(self.instance, pool, run_id, holder)

    def free_slot(self, run_id: str, holder: str) -> None:
        if pools_supported(self.instance):
            free_slot(self.instance, run_id, holder)

    def repair_turns(self, run_id: str) -> int:
        return repair_lost_turns(self.instance, run_id) if pools_supported(self.instance) else 0

    def free_run_slots(self, run_id: str) -> None:
        if pools_supported(self.instance):
            free_run_slots(self.instance, run_id)

    def slot_holders(self) -> set[str]:
        return slot_holders(self.instance) if pools_supported(self.instance) else set()

    # --- the packet index and settling --------------------------------------------------------------------------
    def note_packet_run(self, packet: str, packet_run: str, at_ms: int) -> None:
        kv_set(self.instance, {_index(packet) + packet_run: str(at_ms)})

    def packet_runs(self, packet: str) -> list[str]:
        noted = kv_prefixed(self.instance, _index(packet))
        by_time = sorted(noted.items(), key=lambda item: int(item[1]) if item[1].isdigit() else 0, reverse=True)
        return [key.removeprefix(_index(packet)) for key, _ in by_time]

    def recent_packet_runs(self, limit: int) -> list[PacketRunEntry]:
        entries = []
        for key, value in kv_prefixed(self.instance, tags.PACKET_RUNS_KEY).items():
            packet, _, packet_run = key.removeprefix(tags.PACKET_RUNS_KEY).rpartition("/")
            if packet and packet_run and not packet_run.startswith("."):  # `.indexed` marks a packet, not a run
                entries.append(PacketRunEntry(packet, packet_run, int(value) if value.isdigit() else 0))
        return sorted(entries, key=lambda e: e.at_ms, reverse=True)[:limit]

    def runs_filter(self, packet: str, statuses: Sequence[object] | None = None) -> RunsFilter | None:
        """The filter of the packet's runs (of `statuses`), by their packet-run tag; None when it has none (not
        an operation of `Ledger`: what the benches and tests filter Dagster's runs by)."""
        packet_runs = self.packet_runs(packet)
        if not packet_runs:
            return None
        return RunsFilter(tags={tags.PACKET_RUN: packet_runs}, statuses=list(statuses or []))  # type: ignore[arg-type]

    def runs_of_packet(self, packet: str, statuses: Sequence[object] | None = None,
                       limit: int | None = None) -> list[DagsterRun]:
        """The packet's runs (of `statuses`), newest first: its packet runs from the index, then their runs by
        tag. Once each: a run whose tag row was stored twice came back twice (seen on dagster 1.12's SQLite)."""
        of_packet = self.runs_filter(packet, statuses)
        if of_packet is None:
            return []
        return list({run.run_id: run for run in self.instance.get_runs(of_packet, limit=limit)}.values())

    def run_counts(self, packet_runs: Collection[str]) -> dict[str, int]:
        if not packet_runs:
            return {}
        records = self.instance.get_run_records(RunsFilter(tags={tags.PACKET_RUN: list(packet_runs)}))
        # Once each: a run whose tag row was stored twice came back twice (runs_of_packet).
        counts = Counter(r.dagster_run.tags.get(tags.PACKET_RUN) for r in
                         {r.dagster_run.run_id: r for r in records}.values())
        return {str(p): n for p, n in counts.items() if p}

    def settled(self, packet_runs: Collection[str]) -> dict[str, int]:
        stored = kv_get(self.instance, {tags.SETTLED_KEY + p for p in packet_runs}) if packet_runs else {}
        return {key.removeprefix(tags.SETTLED_KEY): int(v) for key, v in stored.items() if v.isdigit()}

    def mark_settled(self, packet_run: str, runs: int) -> None:
        kv_set(self.instance, {tags.SETTLED_KEY + packet_run: str(runs)})

    # --- hand-offs: one JSON list a packet run, so `awp status` shows the pull request from any host -----------
    def handoff(self, packet: str, packet_run: str) -> list[HandoffResult]:
        key = _handoff_key(packet, packet_run)
        raw = kv_get(self.instance, {key}).get(key)
        return [HandoffResult.model_validate(r) for r in json.loads(raw)] if raw else []

    def keep_handoff(self, packet: str, packet_run: str, results: Sequence[HandoffResult]) -> None:
        # First the URLs, as `awp/pull_request` of the packet run's first run, where Dagster's run page and Runs
        # list show them (one tag on one run: every run's tags cost the Runs list a line each); results never
        # stand without their tag.
        urls = pull_request_urls(results)
        first = self.instance.get_run_records(RunsFilter(tags={tags.PACKET_RUN: packet_run}), limit=1,
                                              ascending=True)
        if urls and first:
            self.instance.add_run_tags(first[0].dagster_run.run_id, {tags.PULL_REQUEST: urls})
        kv_set(self.instance, {_handoff_key(packet, packet_run): json.dumps([r.model_dump() for r in results])})

    def _job(self, run_id: str) -> str:
        run = self.instance.get_run_by_id(run_id)
        return run.job_name if run is not None else "__awp_ledger__"


def _index(packet: str) -> str:
    return f"{tags.PACKET_RUNS_KEY}{packet}/"


def _handoff_key(packet: str, packet_run: str) -> str:
    return f"{tags.HANDOFF_KEY}{packet}/{packet_run}"


def _attempt_event(event: Any) -> AttemptEvent | None:
    """A stored materialization's or observation's asset and metadata (plain values, a start marker flat); None
    for any other event (`event`: a DagsterEvent, or None)."""
    if event is None or event.event_type not in RECORD_EVENTS or event.asset_key is None:
        return None
    data = event.event_specific_data
    payload = getattr(data, "materialization", None) or getattr(data, "asset_observation", None)
    if payload is None:
        return None
    return event.asset_key, flat({k: plain_value(v) for k, v in payload.metadata.items()})
