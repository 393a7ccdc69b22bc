"""The ledger: everything AWP remembers about its packet runs, behind one typed interface, each operation with
what it promises under concurrency and crashes. `InstanceLedger` (instance_ledger.py) keeps it in a Dagster instance
(SQLite or PostgreSQL) through the modules beside this one; `MemoryLedger` (memory_ledger.py) keeps it in a process, so
scenarios about AWP's decisions run as fast tests. tests/ledger/test_ledger_contract.py holds both to the
same promises. docs/architecture.md has them as a table.

"Lost commits" below means a database that acknowledged writes and then lost them (PostgreSQL with
`synchronous_commit=off` killed, a restore from backup): every promise says what AWP notices and repairs then.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from dagster import AssetKey

from awp_pipelines.core.decisions.rotation import AccountUsage, Availability, Cooldown
from awp_pipelines.core.decisions.stops import StopMarker, StopState
from awp_pipelines.core.engine.attempt_record import AttemptRecord
from awp_pipelines.core.records.handoff_record import HandoffResult
from awp_pipelines.orchestration.compile.binding import PacketBinding
from awp_pipelines.orchestration.ledger.heartbeat import Beat
from awp_pipelines.orchestration.ledger.history import PacketRunHistory


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

    def record_attempt(self, run_id: str, key: AssetKey, record: AttemptRecord,
                       shown: Mapping[str, Any] | None = None, description: str | None = None) -> None:
        """An Attempt's record, in its run's log (an ended run's log still takes it: adoption). Append-only;
        two records of one number read as the later one. `shown`: what the asset page shows with it
        (compile/metadata.py, the record among it), else the record alone."""
        ...

    def fail_run(self, run_id: str, why: str) -> None:
        """Reap: the run ended failed, for `why` (its driver is gone). Idempotent; an ended run stays ended."""
        ...

    def why_failed(self, run_id: str) -> str | None:
        """What the run's failure was stored with (`fail_run`'s `why` among it); None when it has not failed."""
        ...

    def last_event_at(self, run_ids: Collection[str]) -> dict[str, float]:
        """Run id → when its newest event was stored (epoch s), for those with any: how long a run has been
        quiet (`awp watch`). A read, no lock: an event stored meanwhile may be missed until the next."""
        ...

    # --- adoption and settling ----------------------------------------------------------------------------
    def adopt(self, binding: PacketBinding, history: PacketRunHistory) -> list[str]:
        """Adopt every Attempt of `history` that committed and whose run ended with no record (adoption.py):
        its record, marked adopted with its commits as evidence, is stored in its own run and added to
        `history`. The Attempt ids adopted. The commit (its `AWP-Attempt` trailer on HEAD) is the proof, so
        a run still driven is never adopted. Two adopters at once (`awp run`, the sensor, a compute) may both
        store the record: it reads once. A crash before the store leaves it to the next reader; lost commits
        lose the adopted record, and the next reader adopts it again from the same commit. An Attempt the
        ledger lost whole (start marker and record) whose commit of this packet run is on HEAD is adopted from
        its trailers too, its start and record stored in a run of the packet run (`lost_commits`)."""
        ...

    def settle(self, binding: PacketBinding, new_packet_run: str) -> list[str]:
        """Before `new_packet_run` starts: adopt the committed Attempts of every earlier packet run of the
        packet and stop each one left unfinished (settling.py). The packet runs stopped. The caller holds the
        packet's lock (`awp run`); two settlers without it both stop a packet run, and one marker stands.
        Each packet run is read once per change: its run count, stored last, says it was settled, so a
        crash mid-way settles it again (adopting and stopping are idempotent). Lost commits are a suffix of
        them: the count never survives without the stop and records stored before it; a lost count (or a
        resume's new run) settles the packet run again."""
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

    def stop_states(self, packet_runs: Collection[str]) -> dict[str, StopState]:
        """Each packet run's stop state, in one read (a sensor tick keeps every stopped packet run in view)."""
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

    def lift(self, account: str) -> Cooldown | None:
        """End the account's cooldown now (`awp accounts lift`: a person fixed its login): the one lifted, None
        when it had none. A rest stored at once with it: last writer wins. Lost commits: a lost lift leaves the
        account resting until its cooldown ends; `awp accounts` shows what stands."""
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

    def run_counts(self, packet_runs: Collection[str]) -> dict[str, int]:
        """Packet run → how many runs it has, for those of `packet_runs` with any. One read."""
        ...

    def settled(self, packet_runs: Collection[str]) -> dict[str, int]:
        """Packet run → its run count when it was last settled (settling.py reads a packet run again only when
        it gained runs since)."""
        ...

    def mark_settled(self, packet_run: str, runs: int) -> None:
        ...

    # --- hand-offs ----------------------------------------------------------------------------------------
    def handoff(self, packet: str, packet_run: str) -> list[HandoffResult]:
        """The packet run's last hand-off, one result per repo; empty when none was tried."""
        ...

    def keep_handoff(self, packet: str, packet_run: str, results: Sequence[HandoffResult]) -> None:
        """Keep a hand-off's results (handoffs.py). Last writer wins: of two hand-offs at once (the sensor and
        `awp handoff`) one's results stand. Lost commits: a lost result reads as the one before it (or none),
        and the next automatic hand-off of the packet run tries again (the open pull request of its branch is
        updated, not opened twice)."""
        ...
