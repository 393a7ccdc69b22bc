"""The ledger's contract (orchestration/ledger/ledger.py), one suite for every implementation: in memory, and a
Dagster instance on SQLite and on PostgreSQL (when AWP_TEST_PG_URL is set; `make test` sets it). A promise
written in `Ledger`'s docstrings is asserted here once, for all of them."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from dagster import AssetKey, DagsterInstance, DagsterRunStatus
from dagster._core.test_utils import create_run_for_test
from ledger.support import a_binding, a_record, dead_runner

from awp_pipelines.core.decisions.rotation import Cooldown
from awp_pipelines.core.decisions.stops import StopMarker
from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.core.records.committer import CommitResult
from awp_pipelines.core.records.handoff_record import HandoffResult
from awp_pipelines.orchestration.ledger.adoption import ADOPTED_REASON, LOST_REASON, OUTAGE_REASON, lost_commits
from awp_pipelines.orchestration.ledger.factory import ledger_of
from awp_pipelines.orchestration.ledger.history import ATTEMPT_STARTED, joining_tags
from awp_pipelines.orchestration.ledger.instance import open_instance_folder
from awp_pipelines.orchestration.ledger.instance_ledger import InstanceLedger
from awp_pipelines.orchestration.ledger.ledger import Ledger
from awp_pipelines.orchestration.ledger.liveness import OUTAGE_MARK, SLOT_GRACE_S, Beat
from awp_pipelines.orchestration.ledger.memory_ledger import MemoryLedger
from awp_pipelines.orchestration.views.watch import watch_reading

KEY = AssetKey(["contract", "p01"])
KEYS = {KEY: "01"}


@dataclass
class Subject:
    """A ledger under test, with what plays Dagster's part for it: making a run (of the whole job, as the
    instance's are) and ending it."""

    ledger: Ledger
    add_run: Callable[[str, DagsterRunStatus], str]  # "": a run of no packet run (one of Dagster's asset jobs)
    end_run: Callable[[str], None]


def _memory() -> Iterator[Subject]:
    memory = MemoryLedger()
    yield Subject(memory, lambda packet_run, status: memory.add_run(packet_run, None, status), memory.end_run)


def _instance(instance: DagsterInstance) -> Iterator[Subject]:
    def add_run(packet_run: str, status: DagsterRunStatus) -> str:
        return create_run_for_test(instance, job_name="contract__job", status=status,
                                   tags={tags.PACKET_RUN: packet_run} if packet_run else {}).run_id

    def end_run(run_id: str) -> None:
        run = instance.get_run_by_id(run_id)
        assert run is not None
        instance.report_run_canceled(run)

    try:
        yield Subject(ledger_of(instance), add_run, end_run)
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


def _commit(repo: Path, attempt: str) -> str:
    """The Attempt's commit, as the engine makes it: its `AWP-Attempt` trailer names it."""
    (repo / f"{attempt}.txt").write_text("work\n")
    for args in (["add", "-A"], ["commit", "--quiet", "-m", f"Work\n\nAWP-Attempt: {attempt}"]):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, check=True, capture_output=True,
                          text=True).stdout.strip()


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


def test_a_run_s_last_event_time_moves_with_what_is_stored_in_it(subject: Subject) -> None:
    ledger = subject.ledger
    quiet, busy = subject.add_run("pr", DagsterRunStatus.STARTED), subject.add_run("pr", DagsterRunStatus.STARTED)
    before = ledger.last_event_at([quiet, busy])
    assert before.keys() <= {quiet, busy} and ledger.last_event_at(["no-such-run"]) == {}
    time.sleep(0.05)
    ledger.record_started(busy, KEY, _marker(1))
    after = ledger.last_event_at([quiet, busy])
    assert after[busy] > before.get(busy, 0.0) and after.get(quiet) == before.get(quiet)


def test_a_record_stored_twice_reads_once(subject: Subject) -> None:
    run = subject.add_run("pr", DagsterRunStatus.STARTED)
    subject.ledger.record_attempt(run, KEY, a_record("pr", 1, "provider_failed", run))
    subject.ledger.record_attempt(run, KEY, a_record("pr", 1, "completed", run))
    [record] = subject.ledger.history("pr", KEYS).agent_runs["01"].records
    assert record.result == "completed"


def test_a_packet_runs_attempt_log_holds_every_asset_s_attempt_events_run_by_run(subject: Subject) -> None:
    """What an Attempt's page reads (`attempt_log`, `run_events`, `recent_packet_runs`): no packet, no asset keys."""
    ledger = subject.ledger
    first, second = subject.add_run("pr", DagsterRunStatus.STARTED), subject.add_run("pr", DagsterRunStatus.STARTED)
    subject.add_run("other", DagsterRunStatus.STARTED)
    other_key = AssetKey(["contract", "p02"])  # an asset the caller names nowhere
    ledger.record_started(first, KEY, _marker(1))
    ledger.record_attempt(first, KEY, a_record("pr", 1, "verification_failed", first))
    ledger.record_started(second, other_key, _marker(2))
    log = ledger.attempt_log("pr")
    assert [r.run_id for r in log.runs] == [first, second]  # oldest first
    [(key, started), (_, recorded)] = log.events[first]
    assert key == KEY and started[tags.EVENT] == ATTEMPT_STARTED and started[tags.ATTEMPT_NUMBER] == 1  # flat
    assert recorded[tags.RECORD]["result"] == "verification_failed"
    assert [k for k, _ in log.events[second]] == [other_key] and log.gone == {}
    page, cursor, _ = ledger.run_events(first, None)
    assert [meta.get(tags.EVENT) for _, meta in page] == [ATTEMPT_STARTED, None]
    ledger.record_attempt(first, KEY, a_record("pr", 1, "completed", first))
    more, _, _ = ledger.run_events(first, cursor)  # only what came after the cursor
    assert [meta[tags.RECORD]["result"] for _, meta in more] == ["completed"]
    ledger.note_packet_run("p", "pr-old", 1_000)
    ledger.note_packet_run("q", "pr-new", 2_000)
    assert [(e.packet, e.packet_run, e.at_ms) for e in ledger.recent_packet_runs(5)] == [
        ("q", "pr-new", 2_000), ("p", "pr-old", 1_000)]
    assert len(ledger.recent_packet_runs(1)) == 1


def _killed_runner(ledger: Ledger, run_id: str) -> None:
    """The run's `awp run` was killed with kill -9: its noted runner is a dead process."""
    dead = dead_runner()
    if isinstance(ledger, MemoryLedger):
        ledger.kv[tags.RUNNER_KEY + run_id] = dead
    else:
        from awp_pipelines.dagster_compat.kvs import kv_set

        assert isinstance(ledger, InstanceLedger)
        kv_set(ledger.instance, {tags.RUNNER_KEY + run_id: dead})


def test_a_run_whose_runner_died_reads_ended_at_once_and_a_reap_ends_it_for_good(subject: Subject) -> None:
    ledger = subject.ledger
    killed, live = subject.add_run("pr", DagsterRunStatus.STARTED), subject.add_run("pr", DagsterRunStatus.STARTED)
    ledger.note_runner(live)
    _killed_runner(ledger, killed)
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
    states = ledger.stop_states(["pr", "other"])
    assert states.keys() == {"pr", "other"} and states["pr"].stopped and not states["other"].stopped
    assert ledger.stop_states([]) == {}


def test_a_resting_account_is_unavailable_until_its_cooldown_ends_and_uses_are_counted(subject: Subject) -> None:
    ledger = subject.ledger
    ledger.rest(Cooldown(account="a", until_ms=2_000, failure_class="provider_rate_limit"))
    assert ledger.availability(["a", "b"], 1_000).resting("a") and not ledger.availability(["a"], 2_000).resting("a")
    assert not ledger.availability(["b"], 1_000).resting("b")
    ledger.record_use("b", 10)
    used = ledger.record_use("b", 20)
    assert (used.attempts, used.last_used_ms) == (2, 20)
    assert ledger.availability(["b"], 30).usage["b"].attempts == 2
    lifted = ledger.lift("a")  # a person fixed its login
    assert lifted is not None and lifted.until_ms == 2_000 and not ledger.availability(["a"], 1_000).resting("a")
    assert ledger.lift("a") is None and ledger.availability(["a"], 1_000).cooldowns == {}


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


def test_an_attempt_that_committed_is_adopted_once_its_run_ended_and_reads_once(subject: Subject, tmp_path: Path,
                                                                                make_git_repo) -> None:
    binding = a_binding(tmp_path / "p", make_git_repo, {"01_a": {}, "02_b": {}})
    ledger, workspace = subject.ledger, tmp_path / "p" / "workspace"
    died, driven = subject.add_run("pr", DagsterRunStatus.STARTED), subject.add_run("pr", DagsterRunStatus.STARTED)
    ledger.note_runner(driven)  # this process drives it: it may yet store its record
    for run, prompt in ((died, "01"), (driven, "02")):
        ledger.record_started(run, binding.key(prompt), _marker(1, binding.intents[prompt]))
    history = ledger.history("pr", binding.keys)
    attempt, live_attempt = history.attempt_of("01", 1), history.attempt_of("02", 1)
    sha = _commit(workspace, attempt)
    _commit(workspace, live_attempt)
    assert ledger.adopt(binding, history) == []  # neither run ended: the commit is not proof enough yet
    subject.end_run(died)
    history = ledger.history("pr", binding.keys)
    assert ledger.adopt(binding, history) == [attempt]
    assert [r.identity.attempt_id for r in history.agent_runs["01"].records] == [attempt]  # history gained it
    after = ledger.history("pr", binding.keys)
    [record] = after.agent_runs["01"].records
    assert record.adopted and record.result == "completed" and record.target.reason == ADOPTED_REASON
    assert record.commits == [CommitResult(repo="app", status="committed", sha=sha)]
    assert record.evidence == {"app": f"{sha} (AWP-Attempt: {attempt})"} and record.identity.dagster_run == died
    assert after.agent_runs["02"].records == []
    assert ledger.adopt(binding, after) == []  # adopted once: the next reader finds its record


def test_an_attempt_whose_run_failed_in_an_outage_is_adopted_as_the_outage_s(subject: Subject, tmp_path: Path,
                                                                            make_git_repo) -> None:
    binding = a_binding(tmp_path / "p", make_git_repo, {"01_a": {}})
    ledger = subject.ledger
    run, other = subject.add_run("pr", DagsterRunStatus.STARTED), subject.add_run("pr", DagsterRunStatus.STARTED)
    ledger.record_started(run, binding.key("01"), _marker(1, binding.intents["01"]))
    assert ledger.why_failed(run) is None
    ledger.fail_run(run, f"its end was never stored: {OUTAGE_MARK} during it")
    ledger.fail_run(run, "a second reap says nothing more")
    why = ledger.why_failed(run)
    assert why is not None and OUTAGE_MARK in why and "second" not in why
    subject.end_run(other)
    assert ledger.why_failed(other) is None  # ended, not failed
    history = ledger.history("pr", binding.keys)
    _commit(tmp_path / "p" / "workspace", history.attempt_of("01", 1))
    assert len(ledger.adopt(binding, history)) == 1
    assert ledger.history("pr", binding.keys).agent_runs["01"].records[0].target.reason == OUTAGE_REASON


def _trailed_commit(repo: Path, packet: str, attempt: str, run: str) -> str:
    """A commit with the trailers the engine writes (core/engine/attempts.py), for Attempt `attempt`."""
    packet_run, prompt, number = attempt.split(".")
    trailers = {"AWP-Packet": packet, "AWP-Prompt": prompt, "AWP-Agent-Run": f"{packet_run}.{prompt}",
                "AWP-Attempt": attempt, "AWP-Mode": "run" if number == "a1" else "repair",
                "AWP-Provider": "simulated", "AWP-Account": "none", "AWP-Model": "m", "AWP-Dagster-Run": run}
    with (repo / "work.txt").open("a") as work:
        work.write(f"{packet} {attempt}\n")
    body = "\n".join(f"{k}: {v}" for k, v in trailers.items())
    for args in (["add", "-A"], ["commit", "--quiet", "-m", f"Work\n\n{body}"]):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, check=True, capture_output=True,
                          text=True).stdout.strip()


def test_an_attempt_the_ledger_lost_whole_is_shown_then_adopted_from_its_commit_once(subject: Subject, tmp_path: Path,
                                                                                     make_git_repo) -> None:
    """Lost commits (issue 32): git holds the commit of Attempt pr.02.a2 while the ledger lost its start marker and
    record, and its run too. A view sees it completed and stores nothing; `adopt` stores its start and record."""
    binding = a_binding(tmp_path / "p", make_git_repo, {"01_a": {}, "02_b": {}, "03_c": {}})
    ledger, workspace = subject.ledger, tmp_path / "p" / "workspace"
    run = subject.add_run("pr", DagsterRunStatus.STARTED)
    ledger.record_started(run, binding.key("01"), _marker(1, binding.intents["01"]))
    known = CommitResult(repo="app", status="committed", sha=_trailed_commit(workspace, "mem", "pr.01.a1", run))
    ledger.record_attempt(run, binding.key("01"), a_record("pr", 1, "completed", run, "01").model_copy(
        update={"commits": [known]}))  # git is read from this commit on
    subject.end_run(run)
    sha = _trailed_commit(workspace, "mem", "pr.02.a2", "a-run-the-database-lost")
    _trailed_commit(workspace, "mem", "pr-other.03.a1", run)  # another packet run's: not this one's
    _trailed_commit(workspace, "other", "pr.03.a1", run)  # another packet's
    assert watch_reading(ledger, binding, "pr", 60).agent_runs["02"] == "completed"  # as `awp status` shows it
    driven = subject.add_run("pr", DagsterRunStatus.STARTED)
    ledger.note_runner(driven)
    _trailed_commit(workspace, "mem", "pr.03.a1", driven)  # its run lives: it stores its own record
    view = ledger.history("pr", binding.keys)
    [(prompt, home, shown)] = lost_commits(binding, view)
    assert (prompt, shown.identity.attempt_id, shown.result, shown.adopted) == ("02", "pr.02.a2", "completed", True)
    assert view.agent_runs["02"].records == [shown] and "02" not in ledger.history("pr", binding.keys).agent_runs
    history = ledger.history("pr", binding.keys)
    assert ledger.adopt(binding, history) == ["pr.02.a2"]
    after = ledger.history("pr", binding.keys)
    [record] = after.agent_runs["02"].records
    assert (record.identity.number, record.identity.mode, record.target.reason) == (2, "repair", LOST_REASON)
    assert record.commits == [CommitResult(repo="app", status="committed", sha=sha)]
    assert record.identity.dagster_run == home and home in {run, driven}  # kept in a run of the packet run
    assert after.agent_runs["02"].started[2][:2] == (home, "repair")  # the count goes on from 2
    assert "03" not in after.agent_runs
    assert ledger.adopt(binding, after) == []  # adopted once


def test_a_new_packet_run_stops_an_earlier_unfinished_one_once_and_again_when_it_gains_runs(
        subject: Subject, tmp_path: Path, make_git_repo) -> None:
    binding = a_binding(tmp_path / "p", make_git_repo, {"01_a": {}, "02_b": {}})
    ledger = subject.ledger
    for at, packet_run in enumerate(("pr-done", "pr-left", "pr-new")):
        ledger.note_packet_run(binding.packet.name, packet_run, at)
    for packet_run, prompts in (("pr-done", ("01", "02")), ("pr-left", ("01",))):  # pr-left: 02 is still due
        run = subject.add_run(packet_run, DagsterRunStatus.STARTED)
        for prompt in prompts:
            ledger.record_started(run, binding.key(prompt), _marker(1, binding.intents[prompt]))
            ledger.record_attempt(run, binding.key(prompt), a_record(packet_run, 1, "completed", run, prompt))
        subject.end_run(run)
    subject.add_run("pr-new", DagsterRunStatus.STARTED)
    assert ledger.run_counts(["pr-done", "pr-left", "pr-new", "pr-none"]) == {"pr-done": 1, "pr-left": 1,
                                                                                "pr-new": 1}
    assert ledger.settle(binding, "pr-new") == ["pr-left"]
    marker = ledger.stop_state("pr-left").marker
    assert marker is not None and marker.by == "new_packet_run" and "pr-new" in marker.reason
    assert ledger.stop_state("pr-done").marker is None and ledger.stop_state("pr-new").marker is None
    assert ledger.settled(["pr-done", "pr-left", "pr-new"]) == {"pr-done": 1, "pr-left": 1}
    ledger.resume("pr-left", time.time() + 1)
    assert ledger.settle(binding, "pr-new") == []  # read once per change: its lifted stop stays lifted
    subject.end_run(subject.add_run("pr-left", DagsterRunStatus.STARTED))  # the resume's run, and it ended
    assert ledger.settle(binding, "pr-new") == ["pr-left"] and ledger.settled(["pr-left"]) == {"pr-left": 2}


def test_a_hand_off_s_results_are_kept_per_packet_run_and_the_last_stands(subject: Subject) -> None:
    ledger = subject.ledger
    assert ledger.handoff("p", "pr") == []
    failed = HandoffResult(repo="app", forge="github", branch="awp/pr", action="failed", message="HTTP 502",
                           at="2026-12-01T00:00:00+00:00")
    opened = failed.model_copy(update={"action": "opened", "url": "https://example.invalid/pull/7", "number": 7,
                                       "message": ""})
    ledger.keep_handoff("p", "pr", [failed])
    ledger.keep_handoff("p", "pr", [opened])  # tried again: the last stands
    assert ledger.handoff("p", "pr") == [opened]
    assert ledger.handoff("p", "pr-other") == [] and ledger.handoff("q", "pr") == []


def _failed(ledger: Ledger, packet_run: str) -> set[str]:
    return {r.run_id for r in ledger.history(packet_run, KEYS).runs if r.status == DagsterRunStatus.FAILURE}


def test_a_reap_of_a_packet_fails_its_runs_whose_driver_is_gone_frees_their_slots_and_drops_ended_beats(
        subject: Subject) -> None:
    ledger, now = subject.ledger, time.time()
    ledger.note_packet_run("p", "pr", 1_000)
    killed, silent, live, ended = (subject.add_run("pr", DagsterRunStatus.STARTED) for _ in range(4))
    _killed_runner(ledger, killed)
    ledger.note_runner(live)
    ledger.beat(Beat(silent, "step", "p", "host-b", 1, now - 100, 2.0))  # its worker on host-b died
    ledger.beat(Beat(ended, "step", "p", "host-b", 2, now, 2.0))
    subject.end_run(ended)  # a beat left behind by a run that ended
    for run, pool in ((killed, "a_tree"), (silent, "b_tree"), (live, "c_tree")):
        assert ledger.claim_slot(pool, run, "step@tree")
    assert ledger.reap("p", now) == {killed: "pr", silent: "pr"}
    assert _failed(ledger, "pr") == {killed, silent} and ledger.history("pr", KEYS).gone == {}
    assert ledger.slot_holders() == {live} and ledger.beats() == []
    killed_why, silent_why = ledger.why_failed(killed), ledger.why_failed(silent)
    assert killed_why is not None and "awp run process" in killed_why
    assert silent_why is not None and "has not beaten" in silent_why
    assert ledger.reap("p", now) == {}  # ended for good: a second reap finds nothing


def test_a_reap_of_every_packet_judges_runs_by_their_beats_alone(subject: Subject) -> None:
    ledger, now = subject.ledger, time.time()
    ledger.note_packet_run("p", "pr", 1_000)
    killed, silent = subject.add_run("pr", DagsterRunStatus.STARTED), subject.add_run("pr", DagsterRunStatus.STARTED)
    _killed_runner(ledger, killed)
    ledger.beat(Beat(silent, "(run)", "", "host-b", 1, now - 100, 2.0))  # a run worker's beat names no packet
    assert ledger.reap("p", now) == {killed: "pr"}  # a packet's reap reads only its own packet's beats
    assert ledger.reap(None, now) == {silent: "pr"}
    assert _failed(ledger, "pr") == {killed, silent} and ledger.beats() == []


def test_ended_runs_slots_are_freed_an_awp_run_s_at_once_a_run_worker_s_after_the_grace(subject: Subject) -> None:
    ledger = subject.ledger
    in_process, worker, running = (subject.add_run("pr", DagsterRunStatus.STARTED) for _ in range(3))
    ledger.note_runner(in_process)
    for run, pool in ((in_process, "a_tree"), (worker, "b_tree"), (running, "c_tree")):
        assert ledger.claim_slot(pool, run, "step@tree")
    subject.end_run(in_process)
    subject.end_run(worker)
    assert ledger.free_ended_slots() == [in_process] and ledger.slot_holders() == {worker, running}
    assert ledger.free_ended_slots(time.time() + SLOT_GRACE_S + 1) == [worker]
    assert ledger.slot_holders() == {running} and ledger.free_ended_slots() == []


def test_a_closed_run_whose_end_was_never_stored_is_failed_as_the_outage_s_and_holds_no_slot(
        subject: Subject) -> None:
    ledger = subject.ledger
    cut, done = subject.add_run("pr", DagsterRunStatus.STARTED), subject.add_run("pr", DagsterRunStatus.STARTED)
    assert ledger.claim_slot("a_tree", cut, "step@tree") and ledger.claim_slot("b_tree", done, "step@tree")
    subject.end_run(done)
    for run in (cut, done, cut):  # idempotent
        ledger.close_run(run)
    why = ledger.why_failed(cut)
    assert why is not None and OUTAGE_MARK in why and ledger.why_failed(done) is None
    assert _failed(ledger, "pr") == {cut} and ledger.slot_holders() == set()


def test_ended_runs_come_oldest_update_first_after_a_time_and_up_to_a_limit(subject: Subject) -> None:
    ledger = subject.ledger
    first, running, second = (subject.add_run("pr", DagsterRunStatus.STARTED) for _ in range(3))
    subject.end_run(first)
    time.sleep(0.01)
    subject.end_run(second)
    ended = ledger.ended_runs(0.0, 10)
    assert [e.run.run_id for e in ended] == [first, second]  # not the run still going
    assert all(e.ended_at is not None and e.ended_at <= e.updated_at + 1 for e in ended)
    assert [e.run.run_id for e in ledger.ended_runs(ended[0].updated_at, 10)] == [second]
    assert [e.run.run_id for e in ledger.ended_runs(0.0, 1)] == [first]
    assert running not in {e.run.run_id for e in ledger.ended_runs(0.0, 10)}


def test_a_run_of_no_packet_run_is_claimed_into_its_own_once_and_a_joined_run_gets_the_tags(
        subject: Subject) -> None:
    ledger = subject.ledger
    untagged = subject.add_run("", DagsterRunStatus.FAILURE)
    own = f"pr-{untagged[:8]}"
    claimed = ledger.claim_run(untagged, "p")
    assert claimed is not None and claimed.tags.items() >= joining_tags(own).items()
    again = ledger.claim_run(untagged, "q")  # another packet's sensor, later: the run as stored
    assert again is not None and again.tags == claimed.tags
    assert ledger.packet_runs("p") == [own] and ledger.packet_runs("q") == []
    assert [r.run_id for r in ledger.history(own, KEYS).runs] == [untagged]
    assert ledger.claim_run("no-such-run", "p") is None

    joining = subject.add_run("pr-j", DagsterRunStatus.STARTED)
    [run] = ledger.history("pr-j", KEYS).runs
    assert not run.tags.items() >= joining_tags("pr-j").items() and "pr-j" not in ledger.packet_runs("p")
    ledger.join_run(run, "p", "pr-j")
    ledger.join_run(run, "p", "pr-j")  # each step of a run of several prompts: the same
    [joined] = ledger.history("pr-j", KEYS).runs
    assert joined.run_id == joining and joined.tags.items() >= joining_tags("pr-j").items()
    assert sorted(ledger.packet_runs("p")) == sorted([own, "pr-j"])


def test_the_latest_history_of_a_prompt_is_its_newest_packet_run_with_a_record_of_it(subject: Subject) -> None:
    ledger = subject.ledger
    ledger.note_packet_run("p", "pr-old", 1_000)
    ledger.note_packet_run("p", "pr-new", 2_000)
    old, new = subject.add_run("pr-old", DagsterRunStatus.STARTED), subject.add_run("pr-new", DagsterRunStatus.STARTED)
    ledger.record_started(old, KEY, _marker(1))
    ledger.record_attempt(old, KEY, a_record("pr-old", 1, "completed", old))
    ledger.record_started(new, KEY, _marker(1))  # started, no record yet
    latest = ledger.latest_history("p", KEYS, "01")
    assert latest is not None and latest.packet_run == "pr-old"
    ledger.record_attempt(new, KEY, a_record("pr-new", 1, "verification_failed", new))
    latest = ledger.latest_history("p", KEYS, "01")
    assert latest is not None and latest.packet_run == "pr-new"
    assert ledger.latest_history("p", KEYS, "02") is None and ledger.latest_history("q", KEYS, "01") is None


def test_a_hand_off_s_pull_request_is_tagged_on_the_packet_run_s_first_run_only(subject: Subject) -> None:
    ledger = subject.ledger
    first, second = subject.add_run("pr", DagsterRunStatus.STARTED), subject.add_run("pr", DagsterRunStatus.STARTED)
    failed = HandoffResult(repo="app", forge="github", branch="awp/pr", action="failed", message="HTTP 502",
                           at="2026-12-01T00:00:00+00:00")
    opened = failed.model_copy(update={"action": "opened", "url": "https://example.invalid/pull/7", "number": 7})
    ledger.keep_handoff("p", "pr", [failed])
    assert not any(tags.PULL_REQUEST in r.tags for r in ledger.history("pr", KEYS).runs)  # no URL: no tag
    ledger.keep_handoff("p", "pr", [opened])
    runs = {r.run_id: r for r in ledger.history("pr", KEYS).runs}
    assert runs[first].tags.get(tags.PULL_REQUEST) == opened.url and tags.PULL_REQUEST not in runs[second].tags


def test_a_waiter_beside_a_held_or_a_freed_slot_has_no_lost_turn_to_repair(subject: Subject) -> None:
    ledger = subject.ledger
    first, second = subject.add_run("pr", DagsterRunStatus.STARTED), subject.add_run("pr", DagsterRunStatus.STARTED)
    assert ledger.claim_slot("app_tree", first, "step@tree") and not ledger.claim_slot("app_tree", second, "step@tree")
    assert ledger.repair_turns(second) == 0 and not ledger.claim_slot("app_tree", second, "step@tree")
    ledger.free_slot(first, "step@tree")  # the free gives the waiter its turn: nothing was lost
    assert ledger.repair_turns(second) == 0 and ledger.claim_slot("app_tree", second, "step@tree")
