"""Decision scenarios under the real compute and the real recovery sensor, on a `MemoryLedger` (memory_dagster.py
plays Dagster's part: launching a run, running its steps, ticking the sensor): what AWP decides — launch, retry,
fallback, repair, stop, hand-off, adoption, settling — with the real engine on the simulated provider and real git
work trees, and no Dagster run. Each was an end-to-end run of its own before (named in each test)."""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
import responses
import yaml
from dagster import DagsterRunStatus
from e2e_support import decided_launch, git_log, sent_prompt
from ledger.memory_dagster import MemoryDagster
from ledger.support import a_packet
from repo_paths import REPO_ROOT

from awp_pipelines.core.decisions.stops import StopMarker
from awp_pipelines.core.engine.attempt_record import AttemptRecord
from awp_pipelines.core.engine.runlock import packet_lock
from awp_pipelines.core.packet.packet import load_packet
from awp_pipelines.core.packet.providers_config import BUILTIN, load_catalog
from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.orchestration.assets import CompiledPacket, packet_assets
from awp_pipelines.orchestration.compute.resources import AwpResource
from awp_pipelines.orchestration.ledger.adoption import ADOPTED_REASON
from awp_pipelines.orchestration.ledger.ledger import now_ms
from awp_pipelines.orchestration.views.status import status_report
from tests.forge_support import GITHUB_PULLS, TOKEN, TOKEN_VAR, forge_demo, github_pr, sent


def _demo(tmp_path: Path) -> CompiledPacket:
    """The demo packet on a fresh work tree: 01 completes, 02's first answer misses an item, 03 is rate limited."""
    demo = tmp_path / "demo"
    shutil.copytree(REPO_ROOT / "assets" / "demo", demo, ignore=shutil.ignore_patterns("workspace", ".awp"))
    subprocess.run(["bash", str(demo / "setup.sh")], check=True, capture_output=True)
    return packet_assets(load_packet(demo), BUILTIN, AwpResource(state_dir=str(tmp_path / "state")))


def test_a_stopped_packet_run_gets_no_launch_until_it_is_resumed_then_completes(tmp_path: Path) -> None:
    """Was tests/e2e/test_stop_runs.py (the same with Dagster runs of the demo and the sensor evaluated on them)."""
    dagster = MemoryDagster(_demo(tmp_path))
    first = dagster.launch()  # "Materialize all"
    assert dagster.execute(first) == DagsterRunStatus.FAILURE  # 02 and 03 failed their first Attempts
    packet_run = dagster.packet_run_of(first)
    assert packet_run == f"pr-{first[:8]}"  # its first compute joined it to a packet run of its own
    ledger = dagster.ledger
    ledger.stop(packet_run, StopMarker.from_signal(signal.SIGINT, 1.0, "awp run was stopped"))
    assert dagster.tick() == []  # without the stop: 02's repair and 03's retry
    report = status_report(ledger, dagster.compiled.binding, packet_run, state_root=tmp_path / "state")
    assert report.state == "stopped" and report.stop is not None and report.stop.by == "SIGINT"
    assert report.stop.resumable == 2 and [p.state for p in report.prompts] == ["completed", "stopped", "stopped"]
    assert dagster.tick() == []  # ticks go on: it stays in view, and gets nothing
    assert ledger.resume(packet_run, time.time()) is not None
    launched = dagster.tick()
    assert {decided_launch(ledger.runs[r].run)[:2] for r in launched} == {("02", "repair"), ("03", "retry")}
    assert all(ledger.runs[r].run.tags[tags.PACKET_RUN] == packet_run for r in launched)
    report = status_report(ledger, dagster.compiled.binding, packet_run, state_root=tmp_path / "state")
    assert report.state == "completed" and [len(p.attempts) for p in report.prompts] == [1, 2, 2]


def test_a_run_cancelled_by_the_user_stops_its_packet_run(tmp_path: Path) -> None:
    """Was tests/e2e/test_stop_runs.py: the UI's Terminate on a relaunch of the packet run before it started."""
    dagster = MemoryDagster(_demo(tmp_path))
    first = dagster.launch()
    dagster.execute(first)
    packet_run = dagster.packet_run_of(first)
    queued = dagster.launch(run_tags={tags.PACKET_RUN: packet_run})
    dagster.ledger.end_run(queued, DagsterRunStatus.CANCELED)
    assert dagster.tick() == []  # without the cancel: 02's repair and 03's retry
    marker = dagster.ledger.stop_state(packet_run).marker
    assert marker is not None and marker.by == "ui_cancel" and queued[:8] in marker.reason


LIMITED = {"error": {"kind": "provider_rate_limit", "message": "You've hit your limit"}}


def _records(dagster: MemoryDagster, packet_run: str, prompt: str = "01") -> list[AttemptRecord]:
    return dagster.ledger.history(packet_run, dagster.keys).agent_runs[prompt].records


def test_a_rate_limit_falls_back_to_the_next_account_then_the_next_provider(tmp_path: Path, make_git_repo) -> None:
    """Was tests/e2e/test_recovery_runs.py (under `awp run`): the sensor's fallbacks, the compute's rests."""
    providers = tmp_path / "providers.yaml"
    providers.write_text(yaml.safe_dump({"providers": {"backup": {"kind": "simulated"}}, "accounts": {
        "sim-a": {"provider": "simulated"}, "sim-b": {"provider": "simulated"}}}))
    prompt = {"id": "01", "verify": {"files_exist": ["done.txt"]},
              "simulate": {"attempts": [LIMITED, LIMITED, {"writes": [{"path": "done.txt", "text": "ok"}]}]}}
    dagster = MemoryDagster(a_packet(tmp_path / "p", make_git_repo, {"01_work": prompt}, load_catalog(providers),
                                     accounts=["sim-a", "sim-b"],
                                     fallback=[{"provider": "backup", "model": "backup-model"}]))
    first = dagster.launch()
    dagster.execute(first)
    assert dagster.until_idle() == 2
    records = _records(dagster, dagster.packet_run_of(first))
    assert [(r.identity.mode, r.target.provider, r.target.account) for r in records] == [
        ("run", "simulated", "sim-a"), ("fallback", "simulated", "sim-b"), ("fallback", "backup", None)]
    assert "provider_rate_limit" in records[1].target.reason and records[-1].result == "completed"
    # Both accounts rest now (the compute stored each cooldown), and the last Attempt's page says where it ran.
    assert set(dagster.ledger.availability(["sim-a", "sim-b"], now_ms()).cooldowns) == {"sim-a", "sim-b"}
    *_, (_, _, shown) = [e for e in dagster.ledger.events if tags.RECORD in e[2]]
    assert (shown["awp/target"], shown["awp/mode"]) == ("backup/backup-model", "fallback")
    assert "AWP-Provider: backup" in git_log(tmp_path / "p" / "workspace")[0]


def test_a_repair_and_a_retry_name_their_parent_run_and_reason_and_a_dependent_starts_after_the_repair(
        tmp_path: Path, make_git_repo) -> None:
    """Was two tests of tests/e2e/test_recovery_runs.py: the repair's and the retry's runs carry Dagster's lineage
    and no Attempt tag; 02 waits on 01 (skipped in the first run) and is launched once 01's repair completed."""
    first_try = {"verify": {"contains": [{"path": "a.txt", "text": "done"}]},
                 "simulate": {"attempts": [{"writes": [{"path": "a.txt", "text": "half"}]},
                                           {"writes": [{"path": "a.txt", "text": "done"}]}]}}
    second = {"depends_on": ["01"], "verify": {"files_exist": ["b.txt"]},
              "simulate": {"attempts": [{"writes": [{"path": "b.txt"}]}]}}
    flaky = {"depends_on": [], "verify": {"files_exist": ["c.txt"]}, "simulate": {"attempts": [
        {"error": {"kind": "provider_capacity", "message": "No capacity right now."}},
        {"writes": [{"path": "c.txt"}]}]}}
    dagster = MemoryDagster(a_packet(tmp_path / "p", make_git_repo,
                                     {"01_first": first_try, "02_second": second, "03_flaky": flaky},
                                     recovery={"retry": {"base_delay_ms": 0, "max_delay_ms": 0, "jitter": False}}))
    first = dagster.launch()
    assert dagster.execute(first) == DagsterRunStatus.FAILURE
    packet_run = dagster.packet_run_of(first)
    repair_and_retry = dagster.tick()
    ledger = dagster.ledger
    runs = {decided_launch(ledger.runs[r].run)[:2]: ledger.runs[r].run for r in repair_and_retry}
    assert set(runs) == {("01", "repair"), ("03", "retry")}
    for run in runs.values():
        assert run.tags["dagster/parent_run_id"] == first and run.tags["dagster/root_run_id"] == first
        assert not {"awp/reason", "awp/agent_run", "awp/mode", "awp/prompt"} & set(run.tags)
    ran, repaired = _records(dagster, packet_run)
    assert [ran.identity.mode, repaired.identity.mode] == ["run", "repair"]
    assert "unmet verifier items" in repaired.target.reason and repaired.identity.parent_run == first
    assert ran.identity.agent_run == repaired.identity.agent_run
    assert _records(dagster, packet_run, "03")[-1].identity.mode == "retry"
    [dependent] = dagster.tick()  # 02, held by 01 until its repair completed
    assert decided_launch(ledger.runs[dependent].run)[:2] == ("02", "run")
    assert _records(dagster, packet_run, "02")[0].target.reason == "upstream 01 completed"
    assert dagster.tick() == []
    report = status_report(ledger, dagster.compiled.binding, packet_run)
    assert report.state == "completed"


def test_an_unmeetable_contract_ends_verification_failed_after_the_repair_budget(tmp_path: Path,
                                                                                make_git_repo) -> None:
    """Was tests/e2e/test_recovery_runs.py: the run, then `repair.max_attempts` repairs, then nothing."""
    never = {"verify": {"contains": [{"path": "a.txt", "text": "never written"}]},
             "simulate": {"attempts": [{"writes": [{"path": "a.txt", "text": "something else"}]}]}}
    dagster = MemoryDagster(a_packet(tmp_path / "p", make_git_repo, {"01_never": never},
                                     recovery={"repair": {"enabled": True, "max_attempts": 2}}))
    first = dagster.launch()
    dagster.execute(first)
    assert dagster.until_idle() == 2
    packet_run = dagster.packet_run_of(first)
    records = _records(dagster, packet_run)
    assert [(r.identity.mode, r.result) for r in records] == [("run", "verification_failed")] + [
        ("repair", "verification_failed")] * 2
    [prompt] = status_report(dagster.ledger, dagster.compiled.binding, packet_run).prompts
    assert prompt.state == "failed" and "after 2 repair(s)" in prompt.reason
    assert len(git_log(tmp_path / "p" / "workspace")) == 1  # nothing of a failed Attempt is committed


def test_a_cooldown_the_compute_stored_is_honoured_by_the_next_packet_run(tmp_path: Path, make_git_repo) -> None:
    """Was tests/e2e/test_recovery_runs.py (two `awp run`s): the rate-limited Attempt's compute rests sim-a; a new
    packet run's first Attempt already starts on sim-b."""
    providers = tmp_path / "providers.yaml"
    providers.write_text(yaml.safe_dump({"accounts": {"sim-a": {"provider": "simulated", "cooldown_s": 3600},
                                                      "sim-b": {"provider": "simulated"}}}))
    front = {"verify": {"files_exist": ["done.txt"]}, "simulate": {"attempts": [LIMITED]}}
    dagster = MemoryDagster(a_packet(tmp_path / "p", make_git_repo, {"01_work": front}, load_catalog(providers),
                                     accounts=["sim-a", "sim-b"]))
    dagster.execute(dagster.launch())
    later = dagster.launch()  # "Materialize all" again: a packet run of its own
    dagster.execute(later)
    [record] = _records(dagster, dagster.packet_run_of(later))
    assert (record.identity.mode, record.target.account) == ("run", "sim-b")
    assert "sim-a is resting" in record.target.reason


def test_a_ui_launch_tagged_repair_repairs_the_prompts_latest_packet_run(tmp_path: Path, make_git_repo) -> None:
    """Was tests/e2e/test_engine_runs.py: the prompt's asset with tags awp/mode=repair and awp/note, no Attempt
    and no packet run; the compute repairs the packet run that holds the prompt's last record."""
    front = {"verify": {"contains": [{"path": "a.txt", "text": "finished"}]},
             "simulate": {"attempts": [{"writes": [{"path": "a.txt", "text": "started"}]},
                                       {"writes": [{"path": "a.txt", "text": "finished"}]}]}}
    dagster = MemoryDagster(a_packet(tmp_path / "p", make_git_repo, {"01_work": front},
                                     recovery={"repair": {"enabled": False}}))
    first = dagster.launch()
    dagster.execute(first)
    packet_run = dagster.packet_run_of(first)
    assert dagster.tick() == []  # repairs are off: nothing comes next on its own
    by_hand = dagster.launch(["01"], {tags.MODE: "repair", tags.NOTE: "say finished"})
    assert dagster.execute(by_hand) == DagsterRunStatus.SUCCESS
    assert dagster.packet_run_of(by_hand) == packet_run
    records = _records(dagster, packet_run)
    assert [(r.identity.mode, r.result) for r in records] == [("run", "verification_failed"), ("repair", "completed")]
    sent = sent_prompt(records[-1].model_dump(mode="json"))
    assert "say finished" in sent and "text not found: 'finished'" in sent


def test_the_recovery_sensor_hands_an_ended_packet_run_off_once_and_again_after_a_failure(
        demo_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Was tests/e2e/test_handoff_runs.py (a Dagster run and the sensor evaluated on it): the forge's API recorded
    with `responses`, the branch pushed to a local bare remote."""
    monkeypatch.setenv(TOKEN_VAR, TOKEN)
    demo = forge_demo(demo_copy, tmp_path)
    dagster = MemoryDagster(packet_assets(load_packet(demo.packet), load_catalog(demo.providers),
                                          AwpResource(state_dir=str(tmp_path / "state"))))
    with responses.RequestsMock() as forge:
        forge.get(GITHUB_PULLS, status=502, json={"message": "Server Error"})
        forge.get(GITHUB_PULLS, json=[])
        forge.post(GITHUB_PULLS, json=github_pr(5), status=201)
        # "Materialize" prompt 01 alone, as from the UI: it completes, and its packet run has nothing left to run.
        run = dagster.launch(["01"])
        assert dagster.execute(run) == DagsterRunStatus.SUCCESS
        packet_run = dagster.packet_run_of(run)
        assert not forge.calls  # the run itself hands nothing off: the tick that sees it end does
        assert dagster.tick() == []
        [failed] = dagster.ledger.handoff("demo", packet_run)
        assert failed.action == "failed" and failed.message == "find the open pull request: HTTP 502: Server Error"
        assert demo.remote_branch() == demo.head()  # pushed before the forge failed: nothing lost
        # A tick that sees the packet run again (a fresh cursor) tries again; once it succeeded, never again.
        for _ in range(2):
            dagster.cursor = None
            dagster.tick()
        [opened] = dagster.ledger.handoff("demo", packet_run)
        assert (opened.action, opened.url) == ("opened", "https://github.com/acme/docs/pull/5")
        assert "### 01 Write the greeting: completed" in sent(forge.calls[2])["body"]
        assert [c.request.method for c in forge.calls] == ["GET", "GET", "POST"]
    # The pull request's URL is a tag of the packet run's first run.
    assert dagster.ledger.runs[run].run.tags[tags.PULL_REQUEST] == "https://github.com/acme/docs/pull/5"


def test_an_attempt_whose_process_died_after_its_commit_is_adopted_by_the_sensor_and_not_run_again(
        tmp_path: Path, make_git_repo) -> None:
    """The sensor's half of tests/e2e/test_agent_run_truth.py's kill -9 after the commit (that one stays: the
    kill itself): the start marker and the commit stand, the record does not; the next tick adopts the Attempt from
    its commit's trailer and launches its dependent, not a retry."""
    first = {"verify": {"files_exist": ["a.txt"]}, "simulate": {"attempts": [{"writes": [{"path": "a.txt"}]}]}}
    second = {"verify": {"files_exist": ["b.txt"]}, "simulate": {"attempts": [{"writes": [{"path": "b.txt"}]}]}}
    dagster = MemoryDagster(a_packet(tmp_path / "p", make_git_repo, {"01_a": first, "02_b": second}))
    killed = dagster.launch()
    dagster.execute(killed, dies_after_commit=True)
    packet_run = dagster.packet_run_of(killed)
    assert _records(dagster, packet_run) == [] and len(git_log(tmp_path / "p" / "workspace")) == 2
    [dependent] = dagster.tick()
    assert decided_launch(dagster.ledger.runs[dependent].run)[:2] == ("02", "run")
    [adopted] = _records(dagster, packet_run)
    assert adopted.adopted and adopted.result == "completed" and adopted.identity.dagster_run == killed
    assert adopted.target.reason == ADOPTED_REASON and adopted.identity.attempt_id == f"{packet_run}.01.a1"
    assert dagster.tick() == []
    assert len(git_log(tmp_path / "p" / "workspace")) == 3  # 01 committed once, 02 once
    assert status_report(dagster.ledger, dagster.compiled.binding, packet_run).state == "completed"


def test_in_a_run_of_several_prompts_the_packet_cap_stops_the_prompts_not_yet_started(
        tmp_path: Path, make_git_repo) -> None:
    """Was tests/e2e/test_engine_runs.py (`awp run --parallel 1`): the compute of each prompt of one run reads the
    packet run's spend; the one that reaches the cap in its session stops there, the next is not started."""
    prompts = {"01_a": {"verify": {"files_exist": ["a.txt"]}, "simulate": {"attempts": [
        {"cost_usd": 0.04, "writes": [{"path": "a.txt", "text": "a"}]}]}}}
    for pid, name, cost in (("02", "b", 0.02), ("03", "c", 0.01)):
        prompts[f"{pid}_{name}"] = {"depends_on": ["01"], "verify": {"files_exist": [f"{name}.txt"]}, "simulate": {
            "attempts": [{"cost_usd": cost, "writes": [{"path": f"{name}.txt", "text": name}]}]}}
    dagster = MemoryDagster(a_packet(tmp_path / "p", make_git_repo, prompts, budget={"max_cost_usd": 0.05}))
    run = dagster.launch()
    assert dagster.execute(run) == DagsterRunStatus.FAILURE
    packet_run = dagster.packet_run_of(run)
    history = dagster.ledger.history(packet_run, dagster.keys)
    assert [r.result for r in history.agent_runs["01"].records] == ["completed"]
    [stopped] = history.agent_runs["02"].records  # it reached the cap inside its session ($0.04 + $0.02)
    assert stopped.result == "provider_failed" and stopped.failure is not None
    assert stopped.failure.failure_class == "budget_exhausted"
    assert "03" not in history.agent_runs  # never started
    assert dagster.tick() == []
    states = {p.prompt: p for p in status_report(dagster.ledger, dagster.compiled.binding, packet_run).prompts}
    assert (states["02"].state, states["03"].state) == ("budget_exhausted", "budget_exhausted")
    assert not any((tmp_path / "p" / "workspace" / name).exists() for name in ("b.txt", "c.txt"))


def test_the_sensor_launches_nothing_for_a_packet_run_a_live_awp_run_drives(tmp_path: Path, make_git_repo) -> None:
    """Was tests/e2e/test_one_driver.py (a sensor tick during `awp run`): two drivers made a fallback twice. While
    the `awp run` that noted itself as the run's runner holds the packet's lock, the sensor leaves the packet run to
    it; once it let go (its process lives on, as a notebook's does), the sensor decides again."""
    providers = tmp_path / "providers.yaml"
    providers.write_text(yaml.safe_dump({"accounts": {"sim-a": {"provider": "simulated"},
                                                      "sim-b": {"provider": "simulated"}}}))
    front = {"verify": {"files_exist": ["one.txt"]},
             "simulate": {"attempts": [LIMITED, {"writes": [{"path": "one.txt", "text": "1"}]}]}}
    compiled = a_packet(tmp_path / "p", make_git_repo, {"01_one": front}, load_catalog(providers),
                        accounts=["sim-a", "sim-b"])
    dagster = MemoryDagster(compiled)
    run = dagster.launch()
    dagster.ledger.note_runner(run)  # as `awp run` does before its run exists
    with packet_lock(compiled.packet, compiled.state_root):
        dagster.execute(run)  # 01.a1 ended rate limited: its fallback is due
        assert dagster.tick() == []  # `awp run` launches it itself
    [fallback] = dagster.tick()
    assert decided_launch(dagster.ledger.runs[fallback].run)[1:] == ("fallback", "sim-b")
