"""The ledger's promises (ledger.py) kept in a Dagster instance, SQLite or PostgreSQL."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from dagster import (
    AssetKey,
    AssetMaterialization,
    AssetObservation,
    DagsterEventType,
    DagsterInstance,
    DagsterRun,
    MetadataValue,
    RunsFilter,
)

from awp_pipelines.core.decisions.rotation import AccountUsage, Availability, Cooldown
from awp_pipelines.core.decisions.stops import StopMarker, StopState
from awp_pipelines.core.engine.attempt_record import AttemptRecord
from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.core.records.handoff_record import HandoffResult
from awp_pipelines.dagster_compat.events import latest_event_time, report_materialization, report_observation
from awp_pipelines.dagster_compat.kvs import kv_delete, kv_get, kv_prefixed, kv_set
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
from awp_pipelines.orchestration.ledger.account_store import AccountStore
from awp_pipelines.orchestration.ledger.adoption import adopt_committed
from awp_pipelines.orchestration.ledger.asset_job_runs import claim_ended_run, join
from awp_pipelines.orchestration.ledger.claims import claim_attempt
from awp_pipelines.orchestration.ledger.ended_runs import EndedRun, ended_since
from awp_pipelines.orchestration.ledger.handoff_store import handoff_of, keep_handoff, tag_root_run
from awp_pipelines.orchestration.ledger.heartbeat import Beat, reap_silent_runs, write_beat
from awp_pipelines.orchestration.ledger.history import PacketRunHistory, packet_run_history
from awp_pipelines.orchestration.ledger.packet_index import latest_history, note_packet_run, packet_runs_of
from awp_pipelines.orchestration.ledger.reaper import end_run, free_slots_of_ended_runs, reap_dead_runs
from awp_pipelines.orchestration.ledger.runners import note_runner, runners_of
from awp_pipelines.orchestration.ledger.settling import settle_earlier_packet_runs
from awp_pipelines.orchestration.ledger.start_marker import marker_metadata
from awp_pipelines.orchestration.ledger.stop_store import StopStore


class InstanceLedger:
    """The ledger in a Dagster instance: the key-value table, the event log, the pools and the runs, through
    the modules of this folder (their functions take the instance: this class is their one caller outside the
    folder's tests, but for `awp serve`'s Attempt page and `awp run --parallel`'s event pages, docs/architecture.md)."""

    def __init__(self, instance: DagsterInstance) -> None:
        self.instance = instance

    def history(self, packet_run: str, keys: Mapping[AssetKey, str]) -> PacketRunHistory:
        return packet_run_history(self.instance, packet_run, keys)

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

    def reap(self, packet: str | None = None, now: float | None = None) -> dict[str, str]:
        reaped = reap_dead_runs(self.instance, packet, now) if packet else reap_silent_runs(self.instance, None, now)
        return {run.run_id: run.tags.get(tags.PACKET_RUN, "") for run in reaped}

    def free_ended_slots(self, now: float | None = None) -> list[str]:
        return free_slots_of_ended_runs(self.instance, now) if pools_supported(self.instance) else []

    def close_run(self, run_id: str) -> None:
        end_run(self.instance, run_id)

    def ended_runs(self, after: float, limit: int) -> list[EndedRun]:
        return ended_since(self.instance, after, limit)

    def join_run(self, run: DagsterRun, packet: str, packet_run: str) -> None:
        join(self.instance, run, packet, packet_run)

    def claim_run(self, run_id: str, packet: str) -> DagsterRun | None:
        return claim_ended_run(self.instance, run_id, packet)

    def adopt(self, binding: PacketBinding, history: PacketRunHistory) -> list[str]:
        return adopt_committed(self, binding, history)

    def settle(self, binding: PacketBinding, new_packet_run: str) -> list[str]:
        return settle_earlier_packet_runs(self, binding, new_packet_run)

    def claim_attempt(self, attempt_id: str, run_id: str) -> str | None:
        return claim_attempt(self.instance, attempt_id, run_id)

    def note_runner(self, run_id: str) -> None:
        note_runner(self.instance, run_id)

    def runners(self, run_ids: Collection[str]) -> dict[str, str]:
        return runners_of(self.instance, run_ids)

    def beat(self, beat: Beat) -> None:
        write_beat(self.instance, beat)

    def beats(self) -> list[Beat]:
        return [b for v in kv_prefixed(self.instance, tags.HEARTBEAT_KEY).values() if (b := Beat.parse(v))]

    def drop_beats(self, keys: Collection[str]) -> None:
        kv_delete(self.instance, list(keys))

    def stop_state(self, packet_run: str) -> StopState:
        return StopStore(self.instance).state(packet_run)

    def stop_states(self, packet_runs: Collection[str]) -> dict[str, StopState]:
        return StopStore(self.instance).states(packet_runs)

    def stop(self, packet_run: str, marker: StopMarker) -> StopState:
        return StopStore(self.instance).stop(packet_run, marker)

    def resume(self, packet_run: str, at: float) -> StopMarker | None:
        return StopStore(self.instance).resume(packet_run, at)

    def rest(self, cooldown: Cooldown) -> None:
        AccountStore(self.instance).set_cooldown(cooldown)

    def lift(self, account: str) -> Cooldown | None:
        return AccountStore(self.instance).lift(account)

    def record_use(self, account: str, at_ms: int) -> AccountUsage:
        return AccountStore(self.instance).record_use(account, at_ms)

    def availability(self, accounts: Iterable[str], at_ms: int) -> Availability:
        return AccountStore(self.instance).availability(accounts, at_ms)

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

    def note_packet_run(self, packet: str, packet_run: str, at_ms: int) -> None:
        note_packet_run(self.instance, packet, packet_run, at_ms)

    def packet_runs(self, packet: str) -> list[str]:
        return packet_runs_of(self.instance, packet)

    def run_counts(self, packet_runs: Collection[str]) -> dict[str, int]:
        if not packet_runs:
            return {}
        records = self.instance.get_run_records(RunsFilter(tags={tags.PACKET_RUN: list(packet_runs)}))
        # Once each: a run whose tag row was stored twice came back twice (packet_index.runs_of_packet).
        counts = Counter(r.dagster_run.tags.get(tags.PACKET_RUN) for r in
                         {r.dagster_run.run_id: r for r in records}.values())
        return {str(p): n for p, n in counts.items() if p}

    def settled(self, packet_runs: Collection[str]) -> dict[str, int]:
        stored = kv_get(self.instance, {tags.SETTLED_KEY + p for p in packet_runs}) if packet_runs else {}
        return {key.removeprefix(tags.SETTLED_KEY): int(v) for key, v in stored.items() if v.isdigit()}

    def mark_settled(self, packet_run: str, runs: int) -> None:
        kv_set(self.instance, {tags.SETTLED_KEY + packet_run: str(runs)})

    def handoff(self, packet: str, packet_run: str) -> list[HandoffResult]:
        return handoff_of(self.instance, packet, packet_run)

    def keep_handoff(self, packet: str, packet_run: str, results: Sequence[HandoffResult]) -> None:
        tag_root_run(self.instance, packet_run, results)  # first: results never stand without their tag
        keep_handoff(self.instance, packet, packet_run, results)

    def _job(self, run_id: str) -> str:
        run = self.instance.get_run_by_id(run_id)
        return run.job_name if run is not None else "__awp_ledger__"
