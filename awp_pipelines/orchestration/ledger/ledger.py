"""The ledger: everything AWP remembers about its packet runs, behind one typed interface, each operation with
what it promises under concurrency and crashes. `InstanceLedger` (instance_ledger.py) keeps it in a Dagster instance
(SQLite or PostgreSQL); `MemoryLedger` (memory_ledger.py) keeps it in a process, so scenarios about AWP's decisions
run under the real compute and sensor code as fast tests. Clients are handed a `Ledger` (factory.py makes it);
tests/ledger/test_ledger_contract.py holds both to the same promises. docs/architecture.md has them as a table.

"Lost commits" below means a database that acknowledged writes and then lost them (PostgreSQL with
`synchronous_commit=off` killed, a restore from backup): every promise says what AWP notices and repairs then.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from dagster import AssetKey, DagsterRun

from awp_pipelines.core.decisions.rotation import AccountUsage, Availability, Cooldown
from awp_pipelines.core.decisions.stops import StopMarker, StopState
from awp_pipelines.core.engine.attempt_record import AttemptRecord
from awp_pipelines.core.records.handoff_record import HandoffResult
from awp_pipelines.orchestration.compile.binding import PacketBinding
from awp_pipelines.orchestration.ledger.history import PacketRunHistory
from awp_pipelines.orchestration.ledger.liveness import Beat

# An Attempt event as a ledger gives it back: its asset, and its metadata as plain values (a start marker's flat).
AttemptEvent = tuple[AssetKey, dict[str, Any]]


@dataclass(frozen=True)
class EndedRun:
    """A run that ended, as the recovery sensor reads it: the cursor moves to `updated_at`; a cancelled run's
    stop is dated `ended_at` (else `updated_at`)."""

    run: DagsterRun
    updated_at: float  # epoch s
    ended_at: float | None = None


@dataclass(frozen=True)
class PacketRunEntry:
    """A packet run as the packet index notes it: its packet and when a run last joined it (ms since epoch)."""

    packet: str
    packet_run: str
    at_ms: int


@dataclass
class AttemptLog:
    """Everything a packet run's runs stored of its Attempts, on any asset (an Attempt's page needs no packet):
    its runs, oldest first, each with the Attempt events it stored in order, and the runs whose driver is gone."""

    runs: list[DagsterRun] = field(default_factory=list)
    events: dict[str, list[AttemptEvent]] = field(default_factory=dict)  # run id → its Attempt events
    gone: dict[str, str] = field(default_factory=dict)  # run id → why (liveness.py)


def now_ms() -> int:
    """Now, as the ledger's operations take a time in milliseconds (`record_use`, `availability`)."""
    return int(time.time() * 1000)


def pull_request_urls(results: Sequence[HandoffResult]) -> str:
    """The `awp/pull_request` tag's value `keep_handoff` stores: the URLs of the hand-offs that have one."""
    return " ".join(r.url for r in results if r.ok and r.url)


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

    def latest_history(self, packet: str, keys: Mapping[AssetKey, str], prompt: str) -> PacketRunHistory | None:
        """The history of the packet run, of the packet's newest (`packet_runs`, at most 200), in which `prompt` has
        an Attempt record: what `awp repair` and a repair launched without a packet run repair. None when none
        has. Reads the packet runs one by one, as `history` does, so a record stored meanwhile may be missed
        until the next read. Lost commits: a lost record (or packet-run note) makes an older packet run the
        newest with one, until the record is adopted back (`adopt`)."""
        ...

    def last_event_at(self, run_ids: Collection[str]) -> dict[str, float]:
        """Run id → when its newest event was stored (epoch s), for those with any: how long a run has been
        quiet (`awp watch`). A read, no lock: an event stored meanwhile may be missed until the next."""
        ...

    def attempt_log(self, packet_run: str) -> AttemptLog:
        """The packet run's runs and every Attempt event they stored, whatever the asset: what an Attempt's page
        (`awp serve`) shows. Bounded by the packet run, as `history`; not a snapshot."""
        ...

    def run_events(self, run_id: str, cursor: str | None) -> tuple[list[AttemptEvent], str, bool]:
        """One page of the run's Attempt events from `cursor` (None: its first), oldest first: the page, the
        cursor after it, and whether more follow. What `awp run --parallel` follows its runs' steps by, in other
        processes, as they store them. An event stored meanwhile comes in a later page."""
        ...

    def recent_packet_runs(self, limit: int) -> list[PacketRunEntry]:
        """Every packet's packet runs, the one a run joined last first, at most `limit`: the front door of the
        Attempt pages. One read of the packet index."""
        ...

    # --- reaping: runs whose driver is gone -----------------------------------------------------------------
    def reap(self, packet: str | None = None, now: float | None = None) -> dict[str, str]:
        """End for good the unfinished runs whose driver is gone, which `history` already counts ended: each is
        failed (`fail_run`, its `why` naming the driver) and every slot it holds freed at once. Of `packet`: its
        runs whose `awp run` noted on this host died (pid + start time), and those with a beat of the packet past
        its bound; of every packet (None, the housekeeping sensor): by beats alone (a runner's pid is judged on
        its own host, by its packet's next `awp run`). The beats of ended runs are dropped. Run id → its packet
        run ("" when it has none), for the runs failed now. Two reapers at once may both fail a run: it ends
        once, and the second `why` is logged beside the first. A crash mid-way leaves the rest to the next reap
        (a run already failed keeps its slots until `free_ended_slots`). Lost commits: a lost failure leaves the
        run unfinished, still read as ended by every view (its driver is still gone), and the next reap fails it
        again."""
        ...

    def free_ended_slots(self, now: float | None = None) -> list[str]:
        """Free every slot and queue entry held by a run that has ended or no longer exists (nothing else frees
        them without Dagster's run monitoring): an `awp run` run's at once, a run worker's once it ended more
        than SLOT_GRACE_S ago (its step may outlive the run's end by a moment; run monitoring waits as long).
        The run ids freed. Idempotent: two at once free the same slots. Lost commits: a lost free keeps the slot
        held until the next call frees it again; a lost end keeps it held by a run that reads unfinished."""
        ...

    def close_run(self, run_id: str) -> None:
        """A run this process executed is over, however it ended: failed if its end was never stored (the
        database was down when it ended: `why_failed` says so, `liveness.OUTAGE_MARK`), and every slot it still
        holds freed (a step frees its own as it ends, which fails while the database is down). Idempotent; an
        ended run stays as it ended. Lost commits: as `reap`, the next `awp run` of the packet ends it again."""
        ...

    # --- runs that ended, and the packet run a run joins ----------------------------------------------------
    def ended_runs(self, after: float, limit: int) -> list[EndedRun]:
        """The runs that reached a finished status after `after` (epoch s, their last update), oldest update
        first, at most `limit`: the recovery sensor's one read a tick for every packet, its cursor the last
        one's `updated_at`. A read, no lock: a run that ends meanwhile comes in a later read (its update time is
        later). Lost commits: a lost end is no end (the run reads unfinished; its driver, gone, is reaped and
        ends it again, and it comes then)."""
        ...

    def join_run(self, run: DagsterRun, packet: str, packet_run: str) -> None:
        """The run belongs to `packet_run` of `packet` (its first compute says so): the packet's index notes the
        packet run now, then the run gets the tags a packet job's run carries (`history.joining_tags`)
        that `run` (the caller's copy: no read) lacks. The caller passes the packet run the run carries, when
        it has one. Idempotent; two joiners of
        one run at once write the same. A crash between leaves a noted packet run the run has not joined yet
        (it has no run more: harmless); lost commits lose a suffix, so a run never carries a tag its packet's
        index lacks, and the next compute of the run joins it again."""
        ...

    def claim_run(self, run_id: str, packet: str) -> DagsterRun | None:
        """An ended run with no packet-run tag (one of Dagster's asset jobs whose worker died before its first
        compute) joins a packet run of its own, `pr-<run id[:8]>` of `packet` (`join_run`): the run as stored
        afterwards. A run that carries a packet-run tag already (another packet's sensor claimed it first: a
        selection across packets joins the first) is left as it is and returned so; None when there is no such
        run. Two claimers at once give it the same tags (its packet run is named after it), and each notes it
        in its own packet's index. A crash or lost commits before the tag: the sensor's cursor, stored after
        it, is lost too, and the next tick claims it again."""
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
        packet and stop each one left unfinished (adoption.py). The packet runs stopped. The caller holds the
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
        """Take the pool's one slot for `holder` of `run_id` (`lease.Lease`: a work tree's, an account's; a storage
        without pools, none shipped, grants every claim and holds nothing): of two claims at once exactly one
        succeeds. A run
        that dies holding one keeps it until `free_run_slots` (the reaper, for ended runs). Lost commits:
        a lost claim frees the slot (a second holder may start: the work tree's claim of its Attempt still
        refuses a second start); a lost free keeps it held until the reaper frees it again."""
        ...

    def free_slot(self, run_id: str, holder: str) -> None:
        ...

    def repair_turns(self, run_id: str) -> int:
        """Assign the run's waiters whose pool has a free slot nobody is assigned to: a database that lost its
        last commits kept a free and lost the turn it gave (dagster_compat/pools.py), and the waiter would wait
        forever. The run worker calls it at each beat; `claim_slot` does it too. How many it assigned. Never
        takes a slot from its holder; two repairs at once may both assign a waiter, which is then assigned once.
        A memory loses no commit: nothing to repair there."""
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
        """Packet run → its run count when it was last settled (settling reads a packet run again only when it
        gained runs since)."""
        ...

    def mark_settled(self, packet_run: str, runs: int) -> None:
        ...

    # --- hand-offs ----------------------------------------------------------------------------------------
    def handoff(self, packet: str, packet_run: str) -> list[HandoffResult]:
        """The packet run's last hand-off, one result per repo; empty when none was tried."""
        ...

    def keep_handoff(self, packet: str, packet_run: str, results: Sequence[HandoffResult]) -> None:
        """Keep a hand-off's results (views/handoff.py), and first their pull requests' URLs as the `awp/pull_request`
        tag of the packet run's first run, where Dagster's run page and Runs list show them (one tag on one run;
        none when no repo's hand-off has a URL). Last writer wins: of two hand-offs at once (the sensor and
        `awp handoff`) one's results stand. The tag is stored first, so results never stand without it: a crash
        between leaves the tag and no result, and the hand-off is tried again. Lost commits: a lost result reads
        as the one before it (or none), and the next automatic hand-off of the packet run tries again (the open
        pull request of its branch is updated, not opened twice)."""
        ...
