"""The ledger: everything AWP remembers about its packet runs, behind one typed interface, each operation with
what it promises under concurrency and crashes. `InstanceLedger` keeps it in a Dagster instance (SQLite or
PostgreSQL) through the modules beside this one; `MemoryLedger` (memory_ledger.py) keeps it in a process, so
scenarios about AWP's decisions run as fast tests. tests/ledger/test_ledger_contract.py holds both to the
same promises. docs/architecture.md has them as a table.

"Lost commits" below means a database that acknowledged writes and then lost them (PostgreSQL with
`synchronous_commit=off` killed, a restore from backup): every promise says what AWP notices and repairs then.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any, Protocol, runtime_checkable

from dagster import AssetKey, AssetMaterialization, AssetObservation, DagsterInstance, MetadataValue

from awp_pipelines.core.decisions.rotation import AccountUsage, Availability, Cooldown
from awp_pipelines.core.decisions.stops import StopMarker, StopState
from awp_pipelines.core.engine.attempt_record import AttemptRecord
from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.dagster_compat.events import report_materialization, report_observation
from awp_pipelines.dagster_compat.kvs import kv_delete, kv_get, kv_prefixed, kv_set
from awp_pipelines.dagster_compat.pools import claim_slot, ensure_pool, free_run_slots, free_slot, slot_holders
from awp_pipelines.orchestration.ledger.account_store import AccountStore
from awp_pipelines.orchestration.ledger.claims import claim_attempt
from awp_pipelines.orchestration.ledger.heartbeat import Beat, write_beat
from awp_pipelines.orchestration.ledger.history import PacketRunHistory, packet_run_history
from awp_pipelines.orchestration.ledger.packet_index import note_packet_run, packet_runs_of
from awp_pipelines.orchestration.ledger.runners import note_runner, runners_of
from awp_pipelines.orchestration.ledger.stop_store import StopStore


@runtime_checkable
class Ledger(Protocol):
    """AWP's state. Every operation may be called from any process on any host sharing the ledger."""

    # --- a packet run's history -------------------------------------------------------------------------
    def history(self, packet_run: str, keys: Mapping[AssetKey, str]) -> PacketRunHistory:
        """The packet run's runs, its prompts' start markers and records, its stop and the accounts' state.
        Bounded by the packet run. A run not ended whose driver is gone (liveness.py) is in `gone` and counts
        ended, at once. Not a snapshot: a record stored during the read may be missing, never half there.
        Lost commits: a lost record reads as an `interrupted` Attempt (it counts against the budget) and is
        adopted back from its commit's trailer when the commit exists (adoption.py); a lost start marker
        lowers the count by one (the claim, if it survived, still refuses a second start of that id)."""
        ...

    def record_started(self, run_id: str, key: AssetKey, marker: Mapping[str, object]) -> None:
        """An Attempt's start marker, in its run's log: stored before its agent starts, so a crash after it
        counts the Attempt. Append-only; two markers of one number keep the later run's."""
        ...

    def record_attempt(self, run_id: str, key: AssetKey, record: AttemptRecord) -> None:
        """An Attempt's record, in its run's log (an ended run's log still takes it: adoption). Append-only;
        two records of one number read as the later one."""
        ...

    def fail_run(self, run_id: str, why: str) -> None:
        """Reap: the run ended failed, for `why` (its driver is gone). Idempotent; an ended run stays ended."""
        ...

    # --- claims, runners, beats ---------------------------------------------------------------------------
    def claim_attempt(self, attempt_id: str, run_id: str) -> str | None:
        """Claim the Attempt for this process of `run_id`: None when it is ours, else its holder. Of any number
        of processes claiming at once (any hosts), exactly one gets None; a holder whose run ended is taken
        over by compare-and-set. Lost commits: a lost claim lets one later claim win again; the start
        marker, stored after the claim, is what counts an Attempt."""
        ...

    def note_runner(self, run_id: str) -> None:
        """This process drives the run (host:pid:start time). Written before the run exists, so a process
        killed at its start is still noticed. Last writer wins."""
        ...

    def runners(self, run_ids: Collection[str]) -> dict[str, str]:
        """Run id → its noted runner, for those that have one. One read."""
        ...

    def beat(self, beat: Beat) -> None:
        """A compute's or run worker's beat; the newest overwrites. A missed write is allowed for: the bound
        is four beats and 10 s."""
        ...

    def beats(self) -> list[Beat]:
        """Every beat stored now."""
        ...

    def drop_beats(self, keys: Collection[str]) -> None:
        ...

    # --- stop and resume ----------------------------------------------------------------------------------
    def stop_state(self, packet_run: str) -> StopState:
        ...

    def stop(self, packet_run: str, marker: StopMarker) -> StopState:
        """Store the user's stop, unless a resume came after it (a stop older than the last resume is void):
        returns what stands. Two stoppers at once: one marker stands, either. Lost commits: a lost stop is
        lost (the packet run goes on); `awp status` shows what stands."""
        ...

    def resume(self, packet_run: str, at: float) -> StopMarker | None:
        """Lift the stop (the lifted marker, if any); a stop stored after `at` still stands afterwards."""
        ...

    # --- accounts: cooldowns and use ----------------------------------------------------------------------
    def rest(self, cooldown: Cooldown) -> None:
        """An exhausted account rests until `cooldown.until_ms`; every process honours it. Last writer wins."""
        ...

    def record_use(self, account: str, at_ms: int) -> AccountUsage:
        """Count a use (a rotation hint, not a budget: two at once may count one)."""
        ...

    def availability(self, accounts: Iterable[str], at_ms: int) -> Availability:
        """The accounts' cooldowns and use as of `at_ms`: what rotation decides from."""
        ...

    # --- leases (one holder per pool) ---------------------------------------------------------------------
    def claim_slot(self, pool: str, run_id: str, holder: str) -> bool:
        """Take the pool's one slot for `holder` of `run_id`: of two claims at once exactly one succeeds. A run
        that dies holding one keeps it until `free_run_slots` (the reaper, for ended runs). Lost commits:
        a lost claim frees the slot (a second holder may start: the work tree's claim of its Attempt still
        refuses a second start); a lost free keeps it held until the reaper frees it again."""
        ...

    def free_slot(self, run_id: str, holder: str) -> None:
        ...

    def free_run_slots(self, run_id: str) -> None:
        """Every slot the run holds. Idempotent."""
        ...

    def slot_holders(self) -> set[str]:
        """The runs that hold a slot now."""
        ...

    # --- the packet index and settling --------------------------------------------------------------------
    def note_packet_run(self, packet: str, packet_run: str, at_ms: int) -> None:
        """A run joined the packet run now (last writer wins)."""
        ...

    def packet_runs(self, packet: str) -> list[str]:
        """The packet's packet runs, the one a run joined last first."""
        ...

    def settled(self, packet_runs: Collection[str]) -> dict[str, int]:
        """Packet run → its run count when it was last settled (settling.py reads a packet run again only when
        it gained runs since)."""
        ...

    def mark_settled(self, packet_run: str, runs: int) -> None:
        ...


class InstanceLedger:
    """The ledger in a Dagster instance: the key-value table, the event log, the pools and the runs, through
    the modules of this folder (each keeps its own functions for the clients not moved yet)."""

    def __init__(self, instance: DagsterInstance) -> None:
        self.instance = instance

    def history(self, packet_run: str, keys: Mapping[AssetKey, str]) -> PacketRunHistory:
        return packet_run_history(self.instance, packet_run, keys)

    def record_started(self, run_id: str, key: AssetKey, marker: Mapping[str, object]) -> None:
        metadata: dict[str, Any] = {k: v for k, v in marker.items() if v is not None}
        report_observation(self.instance, run_id, self._job(run_id), AssetObservation(asset_key=key,
                                                                                      metadata=metadata))

    def record_attempt(self, run_id: str, key: AssetKey, record: AttemptRecord) -> None:
        metadata = {tags.RECORD: MetadataValue.json(record.stored())}
        report_materialization(self.instance, run_id, self._job(run_id),
                               AssetMaterialization(asset_key=key, metadata=metadata))

    def fail_run(self, run_id: str, why: str) -> None:
        run = self.instance.get_run_by_id(run_id)
        if run is not None and not run.is_finished:
            self.instance.report_run_failed(run, why)

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

    def stop(self, packet_run: str, marker: StopMarker) -> StopState:
        return StopStore(self.instance).stop(packet_run, marker)

    def resume(self, packet_run: str, at: float) -> StopMarker | None:
        return StopStore(self.instance).resume(packet_run, at)

    def rest(self, cooldown: Cooldown) -> None:
        AccountStore(self.instance).set_cooldown(cooldown)

    def record_use(self, account: str, at_ms: int) -> AccountUsage:
        return AccountStore(self.instance).record_use(account, at_ms)

    def availability(self, accounts: Iterable[str], at_ms: int) -> Availability:
        return AccountStore(self.instance).availability(accounts, at_ms)

    def claim_slot(self, pool: str, run_id: str, holder: str) -> bool:
        ensure_pool(self.instance, pool)
        return claim_slot(self.instance, pool, run_id, holder)

    def free_slot(self, run_id: str, holder: str) -> None:
        free_slot(self.instance, run_id, holder)

    def free_run_slots(self, run_id: str) -> None:
        free_run_slots(self.instance, run_id)

    def slot_holders(self) -> set[str]:
        return slot_holders(self.instance)

    def note_packet_run(self, packet: str, packet_run: str, at_ms: int) -> None:
        note_packet_run(self.instance, packet, packet_run, at_ms)

    def packet_runs(self, packet: str) -> list[str]:
        return packet_runs_of(self.instance, packet)

    def settled(self, packet_runs: Collection[str]) -> dict[str, int]:
        stored = kv_get(self.instance, {tags.SETTLED_KEY + p for p in packet_runs}) if packet_runs else {}
        return {key.removeprefix(tags.SETTLED_KEY): int(v) for key, v in stored.items() if v.isdigit()}

    def mark_settled(self, packet_run: str, runs: int) -> None:
        kv_set(self.instance, {tags.SETTLED_KEY + packet_run: str(runs)})

    def _job(self, run_id: str) -> str:
        run = self.instance.get_run_by_id(run_id)
        return run.job_name if run is not None else "__awp_ledger__"
