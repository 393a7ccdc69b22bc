"""The ledger's contract (orchestration/ledger/ledger.py), one suite for every implementation: in memory, and a
Dagster instance on SQLite and on PostgreSQL (when AWP_TEST_PG_URL is set; `make test` sets it). A promise
written in `Ledger`'s docstrings is asserted here once, for all of them."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from dagster import AssetKey, DagsterInstance, DagsterRunStatus
from dagster._core.test_utils import create_run_for_test
from ledger.support import a_record, dead_runner

from awp_pipelines.core.decisions.rotation import Cooldown
from awp_pipelines.core.decisions.stops import StopMarker
from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.orchestration.ledger.heartbeat import Beat
from awp_pipelines.orchestration.ledger.history import ATTEMPT_STARTED
from awp_pipelines.orchestration.ledger.instance import open_instance_folder
from awp_pipelines.orchestration.ledger.ledger import InstanceLedger, Ledger
from awp_pipelines.orchestration.ledger.memory_ledger import MemoryLedger

KEY = AssetKey(["contract", "p01"])
KEYS = {KEY: "01"}


@dataclass
class Subject:
    """A ledger under test, with what plays Dagster's part for it: making a run and ending it."""

    ledger: Ledger
    add_run: Callable[[str, DagsterRunStatus], str]
    end_run: Callable[[str], None]


def _memory() -> Iterator[Subject]:
    memory = MemoryLedger()
    yield Subject(memory, lambda packet_run, status: memory.add_run(packet_run, [KEY], status), memory.end_run)


def _instance(instance: DagsterInstance) -> Iterator[Subject]:
    def add_run(packet_run: str, status: DagsterRunStatus) -> str:
        return create_run_for_test(instance, job_name="contract__job", status=status,
                                   tags={tags.PACKET_RUN: packet_run}).run_id

    def end_run(run_id: str) -> None:
        run = instance.get_run_by_id(run_id)
        assert run is not None
        instance.report_run_canceled(run)

    try:
        yield Subject(InstanceLedger(instance), add_run, end_run)
    finally:
        instance.dispose()


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def subject(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Subject]:
    if request.param == "memory":
        yield from _memory()
    elif request.param == "sqlite":
        yield from _instance(open_instance_folder(tmp_path / "home"))
    else:
        from e2e_support import postgres_instance_dir

        url = request.getfixturevalue("fresh_pg_database")
        yield from _instance(open_instance_folder(postgres_instance_dir(tmp_path / "home", url)))


def _marker(number: int, intent: str = "body:1") -> dict[str, object]:
    return {tags.EVENT: ATTEMPT_STARTED, tags.ATTEMPT: f"pr.01.a{number}", tags.ATTEMPT_NUMBER: number,
            tags.MODE: "run" if number == 1 else "retry", tags.PROVIDER: "simulated", tags.ACCOUNT: "acct",
            tags.INTENT: intent}



def test_both_implementations_are_ledgers(subject: Subject) -> None:
    assert isinstance(subject.ledger, Ledger)


def test_history_holds_the_started_attempts_and_their_records_in_order(subject: Subject) -> None:
    ledger = subject.ledger
    first, second = subject.add_run("pr", DagsterRunStatus.STARTED), subject.add_run("pr", DagsterRunStatus.STARTED)
    subject.add_run("other", DagsterRunStatus.STARTED)  # another packet run: never read
    ledger.record_started(first, KEY, _marker(1))
    ledger.record_attempt(first, KEY, a_record("pr", 1, "verification_failed", first))
    subject.end_run(first)
    ledger.record_started(second, KEY, _marker(2, "body:2"))
    history = ledger.history("pr", KEYS)
    whole = history.agent_runs["01"]
    assert {r.run_id for r in history.runs} == {first, second}
    assert [r.identity.number for r in whole.records] == [1] and sorted(whole.started) == [1, 2]
    assert whole.intents == {1: "body:1", 2: "body:2"} and whole.generation(2) == 2
    assert history.finished_runs() == {first} and history.busy(KEYS) == {"01"}
    assert whole.started[2][1:] == ("retry", whole.started[2][2]) and whole.started[2][2].account == "acct"


def test_a_record_stored_twice_reads_once(subject: Subject) -> None:
    run = subject.add_run("pr", DagsterRunStatus.STARTED)
    subject.ledger.record_attempt(run, KEY, a_record("pr", 1, "provider_failed", run))
    subject.ledger.record_attempt(run, KEY, a_record("pr", 1, "completed", run))
    [record] = subject.ledger.history("pr", KEYS).agent_runs["01"].records
    assert record.result == "completed"


def test_a_run_whose_runner_died_reads_ended_at_once_and_a_reap_ends_it_for_good(subject: Subject) -> None:
    ledger = subject.ledger
    killed, live = subject.add_run("pr", DagsterRunStatus.STARTED), subject.add_run("pr", DagsterRunStatus.STARTED)
    ledger.note_runner(live)
    dead = dead_runner()
    if isinstance(ledger, MemoryLedger):
        ledger.kv[tags.RUNNER_KEY + killed] = dead
    else:
        from awp_pipelines.dagster_compat.kvs import kv_set

        assert isinstance(ledger, InstanceLedger)
        kv_set(ledger.instance, {tags.RUNNER_KEY + killed: dead})
    ledger.record_started(killed, KEY, _marker(1))
    history = ledger.history("pr", KEYS)
    assert set(history.gone) == {killed} and killed in history.finished_runs()
    facts = history.agent_runs["01"].facts(history.finished_runs())
    assert [(f.number, f.failure_class) for f in facts] == [(1, "interrupted")]
    ledger.fail_run(killed, "its awp run process is gone")
    ledger.fail_run(killed, "again: idempotent")
    after = ledger.history("pr", KEYS)
    assert after.gone == {} and {r.run_id for r in after.runs if r.status == DagsterRunStatus.FAILURE} == {killed}
    assert ledger.runners([killed, live, "nobody"]).keys() == {killed, live}


def test_a_run_whose_every_beat_is_stale_is_gone_and_beats_can_be_dropped(subject: Subject) -> None:
    ledger = subject.ledger
    silent, beating = subject.add_run("pr", DagsterRunStatus.STARTED), subject.add_run("pr", DagsterRunStatus.STARTED)
    now = time.time()
    ledger.beat(Beat(silent, "step", "p", "host-b", 1, now - 100, 2.0))
    ledger.beat(Beat(beating, "step", "p", "host-b", 2, now - 100, 2.0))
    ledger.beat(Beat(beating, "step", "p", "host-b", 2, now, 2.0))  # the newest overwrites
    assert set(ledger.history("pr", KEYS).gone) == {silent}
    assert sorted(b.run_id for b in ledger.beats()) == sorted([silent, beating])
    ledger.drop_beats([b.key for b in ledger.beats() if b.run_id == silent])
    assert [b.run_id for b in ledger.beats()] == [beating]


def test_an_attempt_is_claimed_once_and_a_dead_holders_claim_is_taken_over(subject: Subject) -> None:
    ledger = subject.ledger
    first, second = subject.add_run("pr", DagsterRunStatus.STARTED), subject.add_run("pr", DagsterRunStatus.STARTED)
    assert ledger.claim_attempt("pr.01.a1", first) is None
    assert ledger.claim_attempt("pr.01.a1", first) is None  # the holder itself, again
    holder = ledger.claim_attempt("pr.01.a1", second)
    assert holder is not None and holder.startswith(first)
    subject.end_run(first)  # it ended before it started the Attempt
    assert ledger.claim_attempt("pr.01.a1", second) is None
    assert ledger.claim_attempt("pr.01.a2", second) is None  # another Attempt: its own claim


def test_a_stop_stands_until_resumed_and_a_stop_older_than_the_resume_is_void(subject: Subject) -> None:
    ledger = subject.ledger
    assert ledger.stop_state("pr").marker is None
    marker = StopMarker(100.0, "awp stop", "for lunch")
    assert ledger.stop("pr", marker).marker == marker and ledger.stop_state("pr").marker == marker
    assert ledger.resume("pr", 200.0) == marker and ledger.stop_state("pr").marker is None
    assert ledger.stop("pr", StopMarker(150.0, "SIGINT", "late signal")).marker is None  # older than the resume
    assert ledger.stop("pr", StopMarker(250.0, "SIGTERM", "")).stopped
    assert ledger.stop_state("other").marker is None


def test_a_resting_account_is_unavailable_until_its_cooldown_ends_and_uses_are_counted(subject: Subject) -> None:
    ledger = subject.ledger
    ledger.rest(Cooldown(account="a", until_ms=2_000, failure_class="provider_rate_limit"))
    assert ledger.availability(["a", "b"], 1_000).resting("a") and not ledger.availability(["a"], 2_000).resting("a")
    assert not ledger.availability(["b"], 1_000).resting("b")
    ledger.record_use("b", 10)
    used = ledger.record_use("b", 20)
    assert (used.attempts, used.last_used_ms) == (2, 20)
    assert ledger.availability(["b"], 30).usage["b"].attempts == 2


def test_a_pool_has_one_holder_its_waiters_queue_and_a_freed_run_holds_nothing(subject: Subject) -> None:
    ledger = subject.ledger
    first, second = subject.add_run("pr", DagsterRunStatus.STARTED), subject.add_run("pr", DagsterRunStatus.STARTED)
    assert ledger.claim_slot("app_tree", first, "step@tree")
    assert ledger.claim_slot("app_tree", first, "step@tree")  # the holder, again
    assert not ledger.claim_slot("app_tree", second, "step@tree")
    assert ledger.slot_holders() == {first, second}  # a waiter holds the pool as well (its queue entry)
    ledger.free_slot(first, "step@tree")
    assert ledger.claim_slot("app_tree", second, "step@tree")  # its turn
    assert not ledger.claim_slot("app_tree", first, "step@tree")
    ledger.free_run_slots(second)
    ledger.free_run_slots(second)  # idempotent
    assert ledger.claim_slot("app_tree", first, "step@tree") and ledger.slot_holders() == {first}
    ledger.free_run_slots(first)
    assert ledger.slot_holders() == set()


def test_the_packet_index_lists_packet_runs_newest_first_and_settling_remembers_counts(subject: Subject) -> None:
    ledger = subject.ledger
    ledger.note_packet_run("p", "pr-old", 1_000)
    ledger.note_packet_run("p", "pr-new", 2_000)
    ledger.note_packet_run("q", "pr-q", 3_000)
    assert ledger.packet_runs("p") == ["pr-new", "pr-old"]
    ledger.note_packet_run("p", "pr-old", 4_000)  # a run joined it again
    assert ledger.packet_runs("p") == ["pr-old", "pr-new"]
    ledger.mark_settled("pr-old", 3)
    assert ledger.settled(["pr-old", "pr-new"]) == {"pr-old": 3}
