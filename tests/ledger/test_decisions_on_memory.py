"""Scenarios about AWP's decisions, on the in-memory ledger: what tests/e2e/test_stop_runs.py and
tests/e2e/test_recovery_runs.py show with real Dagster runs (a stop honoured until the resume, a cooldown
honoured by the next packet run), here with the ledger's state written as the engine writes it and the
packet run's next launches and status read as every driver and view reads them (`awp status` is
status_read.status_report on the ledger, `--remaining` is standing.standing). No Dagster run: fast."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml
from dagster import DagsterRunStatus
from ledger.support import a_binding, a_record, dead_runner

from awp_pipelines.core.decisions.agent_run import packet_run_state
from awp_pipelines.core.decisions.next_launches import next_launches
from awp_pipelines.core.decisions.rotation import Cooldown
from awp_pipelines.core.decisions.stops import StopMarker
from awp_pipelines.core.packet.errors import PacketError
from awp_pipelines.core.packet.providers_config import load_catalog
from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.orchestration.compile.binding import PacketBinding
from awp_pipelines.orchestration.driver.manual_repair import plan_repair
from awp_pipelines.orchestration.ledger.history import ATTEMPT_STARTED, agent_run_truth, decision_inputs
from awp_pipelines.orchestration.ledger.lease import tree_pool
from awp_pipelines.orchestration.ledger.liveness import Beat
from awp_pipelines.orchestration.ledger.memory_ledger import MemoryLedger
from awp_pipelines.orchestration.sensors.asset_job_runs import claimant
from awp_pipelines.orchestration.views.standing import standing
from awp_pipelines.orchestration.views.status import status_report
from awp_pipelines.orchestration.views.watch import watch_reading


def _attempt(ledger: MemoryLedger, binding: PacketBinding, packet_run: str, prompt: str, result: str,
             account: str | None = None, failure_class: str = "provider_runtime_claim") -> str:
    """One Attempt of `prompt` in a run of its own, as the compute stores it: start marker, record, run end."""
    key = binding.key(prompt)
    run = ledger.add_run(packet_run, [key])
    ledger.record_started(run, key, {tags.EVENT: ATTEMPT_STARTED, tags.ATTEMPT_NUMBER: 1, tags.MODE: "run",
                                     tags.PROVIDER: "simulated", tags.ACCOUNT: account,
                                     tags.INTENT: binding.intents[prompt]})
    ledger.record_attempt(run, key, a_record(packet_run, 1, result, run, prompt, account or "acct", failure_class,
                                             ended_at="2020-01-01T00:00:00+00:00"))
    ledger.end_run(run, DagsterRunStatus.SUCCESS if result == "completed" else DagsterRunStatus.FAILURE)
    return run


def test_a_stopped_packet_run_gets_no_launch_until_it_is_resumed(tmp_path: Path, make_git_repo) -> None:
    contract = {"verify": {"files_exist": ["x.txt"]}}
    binding = a_binding(tmp_path / "p", make_git_repo, {"01_a": contract, "02_b": contract, "03_c": contract})
    ledger = MemoryLedger()
    _attempt(ledger, binding, "pr-1", "01", "completed")
    _attempt(ledger, binding, "pr-1", "02", "verification_failed")
    _attempt(ledger, binding, "pr-1", "03", "provider_failed")
    now = time.time()

    ledger.stop("pr-1", StopMarker(now, "SIGINT", "awp run was stopped"))
    history = ledger.history("pr-1", binding.keys)
    assert next_launches(decision_inputs(binding, history), now, history.stopped).due == []
    _, statuses = agent_run_truth(binding, history)
    assert packet_run_state(statuses)[0] == "stopped"
    assert [statuses[p].state for p in ("01", "02", "03")] == ["completed", "stopped", "stopped"]

    assert ledger.resume("pr-1", now + 1) is not None
    history = ledger.history("pr-1", binding.keys)
    due = next_launches(decision_inputs(binding, history), now + 3600, history.stopped).due
    assert {launch.prompt: launch.mode for launch in due} == {"02": "repair", "03": "retry"}
    assert packet_run_state(agent_run_truth(binding, history)[1])[0] == "running"


def test_a_rate_limit_rests_the_account_and_the_next_packet_run_starts_on_another(tmp_path: Path,
                                                                                  make_git_repo) -> None:
    providers = tmp_path / "providers.yaml"
    providers.write_text(yaml.safe_dump({"accounts": {"sim-a": {"provider": "simulated", "cooldown_s": 3600},
                                                      "sim-b": {"provider": "simulated"}}}))
    binding = a_binding(tmp_path / "p", make_git_repo, {"01_work": {"verify": {"files_exist": ["done.txt"]}}},
                       load_catalog(providers), accounts=["sim-a", "sim-b"])
    ledger = MemoryLedger()
    first = decision_inputs(binding, ledger.history("pr-1", binding.keys), ["01"])
    [launch] = next_launches(first, time.time()).due
    assert launch.target.account == "sim-a"
    _attempt(ledger, binding, "pr-1", "01", "provider_failed", "sim-a", "provider_rate_limit")
    ledger.rest(Cooldown(account="sim-a", until_ms=int(time.time() * 1000) + 3_600_000,
                         failure_class="provider_rate_limit"))

    second = decision_inputs(binding, ledger.history("pr-2", binding.keys), ["01"])
    [launch] = next_launches(second, time.time()).due
    assert (launch.mode, launch.target.account) == ("run", "sim-b") and "sim-a is resting" in launch.reason


def test_status_and_watch_say_interrupted_at_once_when_the_awp_run_driving_the_packet_run_was_killed(
        tmp_path: Path, make_git_repo) -> None:
    """`kill -9` of `awp run` mid-Attempt, and no rerun: its run still reads STARTED in Dagster, but its driver
    is gone, so `awp status`, `awp watch` and `--remaining` (which read the same history) say so already."""
    binding = a_binding(tmp_path / "p", make_git_repo, {"01_a": {}, "02_b": {}})
    ledger = MemoryLedger()
    ledger.note_packet_run("mem", "pr-1", 1_000)
    _attempt(ledger, binding, "pr-1", "01", "completed")
    killed = ledger.add_run("pr-1", [binding.key("02")])
    ledger.record_started(killed, binding.key("02"), {tags.EVENT: ATTEMPT_STARTED, tags.ATTEMPT_NUMBER: 1,
                                                      tags.MODE: "run", tags.PROVIDER: "simulated",
                                                      tags.INTENT: binding.intents["02"]})
    ledger.note_runner(killed)  # this process drives it: alive, so the Attempt runs
    report = status_report(ledger, binding, state_root=tmp_path / "state")
    assert (report.packet_run, report.state) == ("pr-1", "running")
    assert [p.state for p in report.prompts] == ["completed", "active"]
    reading = watch_reading(ledger, binding, None, 30, state_root=tmp_path / "state")
    assert reading.state == "running" and reading.violations == [] and [c.prompt for c in reading.current] == ["02"]

    ledger.kv[tags.RUNNER_KEY + killed] = dead_runner()  # its `awp run` was killed with kill -9
    report = status_report(ledger, binding, state_root=tmp_path / "state")
    assert report.state == "interrupted" and [p.state for p in report.prompts] == ["completed", "interrupted"]
    assert report.prompts[1].attempts[0].result == "interrupted"
    packet_run, statuses, _ = standing(ledger, binding)
    assert packet_run == "pr-1" and statuses["02"].state == "interrupted"
    reading = watch_reading(ledger, binding, None, 30, state_root=tmp_path / "state")
    assert reading.state == "interrupted" and "not_running" in reading.violations and reading.current == []
    assert any(killed[:8] in line for line in reading.details)


def test_status_and_watch_say_interrupted_when_awp_run_was_killed_between_two_attempts(tmp_path: Path,
                                                                                       make_git_repo) -> None:
    """`kill -9` of `awp run` after 01's Attempt and before 02's started, in the one run that holds both (found
    by hand): no Attempt was cut, but nothing will start 02 until a resume, so every view says interrupted and
    names the run whose driver is gone, not `running (due: 02)`."""
    binding = a_binding(tmp_path / "p", make_git_repo, {"01_a": {}, "02_b": {}})
    ledger = MemoryLedger()
    ledger.note_packet_run("mem", "pr-1", 1_000)
    both = ledger.add_run("pr-1", [binding.key("01"), binding.key("02")])
    ledger.record_started(both, binding.key("01"), {tags.EVENT: ATTEMPT_STARTED, tags.ATTEMPT_NUMBER: 1,
                                                    tags.MODE: "run", tags.PROVIDER: "simulated",
                                                    tags.INTENT: binding.intents["01"]})
    ledger.record_attempt(both, binding.key("01"), a_record("pr-1", 1, "completed", both, "01"))
    ledger.note_runner(both)
    assert status_report(ledger, binding, state_root=tmp_path / "state").state == "running"  # driven: 02 next

    ledger.kv[tags.RUNNER_KEY + both] = dead_runner()
    report = status_report(ledger, binding, state_root=tmp_path / "state")
    assert report.state == "interrupted" and both[:8] in report.reason and "02" in report.reason
    assert [p.state for p in report.prompts] == ["completed", "planned"]
    reading = watch_reading(ledger, binding, None, 30, state_root=tmp_path / "state")
    assert (reading.state, reading.reason) == ("interrupted", report.reason) and "not_running" in reading.violations


@pytest.mark.parametrize("driver", ["awp_run_killed", "worker_silent"])
def test_a_reap_ends_the_run_whose_driver_is_gone_every_view_still_says_interrupted_and_its_retry_gets_the_tree(
        driver: str, tmp_path: Path, make_git_repo) -> None:
    """What the next `awp run` (its packet's reap) or the housekeeping sensor (every packet's, by beats) does
    after `kill -9` of an `awp run` or of a Celery worker mid-Attempt (tests/reliability/test_kill9_plain_rerun.py,
    tests/daemon/test_daemon_dead_run_worker.py): the run is failed and its work tree given back, the views say
    what they said before the reap, and the Attempt counts as interrupted, so the next launch is its retry."""
    binding = a_binding(tmp_path / "p", make_git_repo, {"01_a": {}, "02_b": {}})
    ledger, state = MemoryLedger(), tmp_path / "state"
    ledger.note_packet_run("mem", "pr-1", 1_000)
    _attempt(ledger, binding, "pr-1", "01", "completed")
    died = ledger.add_run("pr-1", [binding.key("02")])
    tree = tree_pool(binding.pools["02"])
    assert ledger.claim_slot(tree, died, "02@tree")
    ledger.record_started(died, binding.key("02"), {tags.EVENT: ATTEMPT_STARTED, tags.ATTEMPT_NUMBER: 1,
                                                    tags.MODE: "run", tags.PROVIDER: "simulated",
                                                    tags.INTENT: binding.intents["02"]})
    if driver == "awp_run_killed":
        ledger.kv[tags.RUNNER_KEY + died] = dead_runner()
    else:
        ledger.beat(Beat(died, "02", "mem", "host-b", 7, time.time() - 100, 2.0))

    def views() -> tuple[str, str, str, str]:
        report = status_report(ledger, binding, state_root=state)
        _, statuses, _ = standing(ledger, binding)
        return (report.state, report.prompts[1].attempts[0].result, statuses["02"].state,
                watch_reading(ledger, binding, None, 30, state_root=state).state)

    before = views()
    assert before == ("interrupted", "interrupted", "interrupted", "interrupted")
    reaped = ledger.reap("mem") if driver == "awp_run_killed" else ledger.reap()
    assert reaped == {died: "pr-1"} and ledger.slot_holders() == set() and ledger.reap() == {}
    assert views() == before  # the reap made it Dagster's truth too: no view changed its word
    history = ledger.history("pr-1", binding.keys)
    [retry] = next_launches(decision_inputs(binding, history), time.time() + 3600, history.stopped).due
    assert (retry.prompt, retry.number) == ("02", 2)
    assert ledger.claim_slot(tree, ledger.add_run("pr-1", [binding.key("02")]), "02@tree")  # its tree is free


def test_a_materialize_all_run_that_died_before_its_first_compute_is_claimed_into_its_own_packet_run(
        tmp_path: Path, make_git_repo) -> None:
    """The recovery sensor's read of what ended and its claim (tests/daemon/test_daemon_asset_job_runs.py under a
    real daemon): a run of Dagster's asset job that carries no packet run joins one named after it, once, and
    the prompts it selected are launched in it."""
    binding = a_binding(tmp_path / "p", make_git_repo, {"01_a": {}, "02_b": {}})
    ledger = MemoryLedger()
    lost = ledger.add_run(None, list(binding.keys), DagsterRunStatus.FAILURE, job_name="__ASSET_JOB")
    [ended] = ledger.ended_runs(0.0, 200)
    assert claimant(ended.run, [binding]) is binding
    claimed = ledger.claim_run(ended.run.run_id, binding.packet.name)
    assert claimed is not None and claimant(claimed, [binding]) is None  # claimed once: a later tick leaves it
    packet_run = claimed.tags[tags.PACKET_RUN]
    assert packet_run == f"pr-{lost[:8]}" and ledger.packet_runs("mem") == [packet_run]
    history = ledger.history(packet_run, binding.keys)
    inputs = decision_inputs(binding, history)
    assert [(i.prompt, i.deps) for i in inputs] == [("01", ()), ("02", ("01",))]  # the prompts it selected
    due = next_launches(inputs, time.time(), history.stopped).due
    assert [(launch.prompt, launch.mode) for launch in due] == [("01", "run")]  # 02 once its upstream completed


def test_a_repair_by_hand_without_a_packet_run_repairs_the_prompt_s_newest_packet_run_with_a_record(
        tmp_path: Path, make_git_repo) -> None:
    """`awp repair` with no --packet-run: the newest packet run in which the prompt has a record (a newer one
    where it only ran other prompts is passed over), and a prompt never recorded has nothing to repair."""
    contract = {"verify": {"files_exist": ["x.txt"]}}
    binding = a_binding(tmp_path / "p", make_git_repo, {"01_a": contract, "02_b": contract})
    ledger = MemoryLedger()
    for at, packet_run in ((1_000, "pr-1"), (2_000, "pr-2")):
        ledger.note_packet_run("mem", packet_run, at)
    _attempt(ledger, binding, "pr-1", "01", "verification_failed")
    _attempt(ledger, binding, "pr-2", "02", "completed")
    packet_run, launch = plan_repair(ledger, binding, "01", None, "the file is x.txt")
    assert (packet_run, launch.prompt, launch.mode, launch.number) == ("pr-1", "01", "repair", 2)
    with pytest.raises(PacketError, match="no Attempt on record"):
        plan_repair(ledger, binding, "02", "pr-1", None)
