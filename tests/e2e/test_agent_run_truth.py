"""One truth about every AgentRun (issue 15): for each scenario, `awp run`'s summary, `awp status --json`,
`awp watch --json --once`, the recovery sensor's next launches (evaluated in process on the same instance) and
the asset metadata (`awp/agent_run_state` of each prompt's latest Attempt) say the same state for every prompt,
and the next action is the right one. In process; the kill and Ctrl-C rows run `awp run` as a process of its
own (tests/reliability/crash.py) and stop it at the point."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import yaml
from dagster import ExecuteInProcessResult, build_sensor_context
from e2e_support import awp, decided_launch, git_log, stored_attempts
from reliability.crash import SLOW, event, kill_when, spawn, wait_for, write_packet

from awp_pipelines.core.decisions.next_launches import Launch
from awp_pipelines.core.decisions.policy import Target
from awp_pipelines.core.packet.packet import load_packet
from awp_pipelines.core.packet.providers_config import load_catalog
from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.orchestration.assets import packet_assets
from awp_pipelines.orchestration.compile.attempt_config import launch_run_config
from awp_pipelines.orchestration.compile.naming import job_name
from awp_pipelines.orchestration.ledger.adoption import OUTAGE_REASON
from awp_pipelines.orchestration.ledger.factory import ledger_of
from awp_pipelines.orchestration.ledger.history import UNFINISHED
from awp_pipelines.orchestration.ledger.instance import open_instance

CONTROL = {"enabled": True, "completion_verify": {"files_exist": ["final.txt"]}, "max_iterations": 3}
NO_REPAIR = {"repair": {"enabled": False}}


def _packet(root: Path, make_git_repo, prompts: dict[str, dict[str, Any]], **manifest: Any) -> Path:
    """A linear packet on one work tree: each prompt (`NN_slug` → front matter) after the one before."""
    make_git_repo(root / "workspace")
    (root / "packet.yaml").write_text(yaml.safe_dump({"name": "truth", "provider": "simulated",
                                                      "repos": {"app": {"path": "./workspace", "default": True}},
                                                      **manifest}))
    (root / "prompts").mkdir()
    for name, front in prompts.items():
        (root / "prompts" / f"{name}.prompt.md").write_text(f"---\n{yaml.safe_dump(front)}---\nWork.\n")
    return root


def _writes(path: str, **control: Any) -> dict[str, Any]:
    step: dict[str, Any] = {"writes": [{"path": path, "text": "x\n"}]}
    return {**step, "control": control} if control else step


def _prompt(path: str, *steps: dict[str, Any]) -> dict[str, Any]:
    return {"verify": {"files_exist": [path]}, "simulate": {"attempts": list(steps) or [_writes(path)]}}


def _run(*args: str | Path) -> tuple[int, dict[str, Any]]:
    result = awp("run", *args, "--json")
    return result.exit_code, json.loads(result.stdout) if result.stdout.startswith("{") else {}


def _metadata_states(packet: Path) -> dict[str, str]:
    """Prompt → the state word in the asset metadata of its latest recorded Attempt (materialization or
    observation; the start markers carry none)."""
    binding = packet_assets(load_packet(packet), load_catalog(None)).binding
    instance = open_instance(packet)
    found: dict[str, str] = {}
    try:
        for prompt in binding.packet.prompts:
            key = binding.key(prompt.id)
            events = [(r.storage_id, r.asset_materialization.metadata) for r in
                      instance.fetch_materializations(key, limit=5).records if r.asset_materialization]
            events += [(r.storage_id, r.asset_observation.metadata) for r in
                       instance.fetch_observations(key, limit=10).records if r.asset_observation]
            stated = [(sid, meta[tags.AGENT_RUN_STATE].value) for sid, meta in events if tags.AGENT_RUN_STATE in meta]
            if stated:
                found[prompt.id] = str(max(stated)[1]).split(" — ")[0]
    finally:
        instance.dispose()
    return found


def _sensor_launches(packet: Path) -> list[tuple[str, str]]:
    """What the recovery sensor would launch now, evaluated on the packet's instance: (prompt, mode)."""
    compiled = packet_assets(load_packet(packet), load_catalog(None))
    instance = open_instance(packet)
    try:
        result = compiled.sensor(build_sensor_context(instance=instance))
        return sorted(decided_launch(r)[:2] for r in result.run_requests or [])
    finally:
        instance.dispose()


def assert_one_truth(packet: Path, packet_run: str, expected: dict[str, str], packet_state: str,
                     launches: list[tuple[str, str]], summary: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every reader says `expected` (prompt → state word; prompts of the packet not in it are not selected)."""
    status = json.loads(awp("status", packet, "--packet-run", packet_run, "--json").stdout)
    assert status["packet_run"] == packet_run
    assert {p["prompt"]: p["state"] for p in status["prompts"] if p["state"] != "not_selected"} == expected
    assert status["state"] == packet_state, status["reason"]
    assert status["totals"]["prompts"] == len(expected)
    watched = awp("watch", packet, "--packet-run", packet_run, "--json", "--once")
    reading = json.loads(watched.stdout)
    assert reading["agent_runs"] == expected
    assert (reading["state"], reading["prompts"]) == (packet_state, len(expected))
    assert reading["completed"] == status["totals"]["completed"]
    if summary is not None:
        assert summary["packet_run"] == packet_run
        assert {o["prompt"]: o["state"] for o in summary["prompts"]} == {p: expected[p] for p in
                                                                         (o["prompt"] for o in summary["prompts"])}
    metadata = _metadata_states(packet)
    assert metadata == {p: s for p, s in expected.items() if p in metadata}
    assert _sensor_launches(packet) == launches
    return status


def test_one_prompt_run_alone_is_a_packet_run_of_one_prompt(tmp_path: Path, make_git_repo) -> None:
    packet = _packet(tmp_path / "p", make_git_repo, {"01_a": _prompt("a.txt"), "02_b": _prompt("b.txt"),
                                                     "03_c": _prompt("c.txt")})
    code, summary = _run(packet, "01")
    assert code == 0
    status = assert_one_truth(packet, summary["packet_run"], {"01": "completed"}, "completed", [], summary)
    assert status["totals"]["completed"] == 1
    # Next: 02 alone in this packet run, where its upstream completed: no warning (one in a new packet run is
    # the user's choice, warned about: test_an_explicit_selection_runs_what_was_chosen_and_warns_...).
    code, more = _run(packet, "--packet-run", summary["packet_run"], "02")
    assert code == 0 and [o["state"] for o in more["prompts"]] == ["completed"] and "warnings" not in more


def test_a_resume_that_adds_a_prompt_starts_it_once_its_upstream_completes(tmp_path: Path, make_git_repo) -> None:
    fails = {"error": {"kind": "provider_runtime_claim"}}
    packet = _packet(tmp_path / "p", make_git_repo, {"01_a": _prompt("a.txt", fails, _writes("a.txt")),
                                                     "02_b": _prompt("b.txt")},
                     recovery={"retry": {"base_delay_ms": 0, "jitter": False}})
    code, first = _run(packet, "01", "--no-recovery")
    assert code == 1
    assert_one_truth(packet, first["packet_run"], {"01": "waiting"}, "running", [("01", "retry")], first)
    code, resumed = _run(packet, "--packet-run", first["packet_run"], "01", "02")  # 02 waits for 01's retry
    assert code == 0, resumed
    assert_one_truth(packet, first["packet_run"], {"01": "completed", "02": "completed"}, "completed", [], resumed)


def test_an_upstream_that_failed_holds_its_dependents_and_a_resume_runs_nothing(tmp_path: Path,
                                                                                  make_git_repo) -> None:
    packet = _packet(tmp_path / "p", make_git_repo, {"01_a": {**_prompt("never.txt", _writes("a.txt"))},
                                                     "02_b": _prompt("b.txt"), "03_c": _prompt("c.txt")},
                     recovery=NO_REPAIR)
    code, summary = _run(packet)
    assert code == 1
    expected = {"01": "failed", "02": "planned", "03": "planned"}
    assert_one_truth(packet, summary["packet_run"], expected, "failed", [], summary)
    commits = git_log(packet / "workspace")
    resumed = awp("run", packet, "--packet-run", summary["packet_run"])
    assert resumed.exit_code == 1
    assert "nothing can run in packet run" in resumed.output
    assert "02 planned — held: upstream 01 failed" in resumed.output
    assert git_log(packet / "workspace") == commits  # 02 and 03 did not run on a tree without 01's work
    remaining = awp("run", packet, "--remaining")  # the same packet run, the same answer
    assert remaining.exit_code == 1 and "01 failed" in remaining.output
    assert_one_truth(packet, summary["packet_run"], expected, "failed", [])
    # A launch the sensor makes of 02 in that packet run (its config carries the launch it decided): its compute
    # refuses, naming 01.
    decided = Launch("02", 1, "run", "upstream 01 completed", Target("simulated", "simulated-demo", None))
    automatic = _materialize(packet, "02", {tags.PACKET_RUN: summary["packet_run"]}, decided)
    assert not automatic.success and git_log(packet / "workspace") == commits
    [failure] = [e for e in automatic.all_events if e.is_step_failure]
    assert failure.step_failure_data.user_failure_data.description.startswith(
        f"prompt 02 does not start in packet run {summary['packet_run']}: held: upstream 01 failed")
    # The user's own launch of 02 alone from the UI (a run of its asset, chosen): it runs, warning about 01.
    chosen = _materialize(packet, "02", {tags.PACKET_RUN: summary["packet_run"]})
    assert chosen.success and len(git_log(packet / "workspace")) == len(commits) + 1
    instance = open_instance(packet)
    try:
        logged = [e.user_message for e in instance.all_logs(chosen.run_id)]
    finally:
        instance.dispose()
    assert any("02 starts as you selected it" in m and "upstream 01 failed" in m for m in logged)


def test_an_explicit_selection_runs_what_was_chosen_and_warns_about_each_unfinished_upstream(
        tmp_path: Path, make_git_repo) -> None:
    packet = _packet(tmp_path / "p", make_git_repo, {"01_a": _prompt("a.txt"), "02_b": _prompt("b.txt"),
                                                     "03_c": _prompt("c.txt")})
    chosen = awp("run", packet, "01", "03")
    assert chosen.exit_code == 0, chosen.output
    assert "warning: 03 runs as you selected it, though its upstream 02 is not completed in a new packet run" \
        in chosen.stderr
    assert "  02 " not in chosen.stdout and "2/2 prompts done" in chosen.stdout  # 01 and 03 ran, 02 did not
    prompts = subprocess.run(["git", "-C", str(packet / "workspace"), "log", "--format=%(trailers:key=AWP-Prompt,"
                              "valueonly)"], capture_output=True, text=True, check=True).stdout.split()
    assert sorted(prompts) == ["01", "03"]  # nothing committed for 02
    code, summary = _run(packet, "--from", "02")  # a range is explicit too: it warns about 01
    assert code == 0 and summary["warnings"] == [
        "02 runs as you selected it, though its upstream 01 is not completed in a new packet run"]
    # Automatic continuation holds dependents: --remaining of a packet run that ran 01 alone leaves none out.
    code, only = _run(packet, "01")
    assert code == 0 and "warnings" not in only


def test_an_attempt_whose_record_an_outage_lost_is_adopted_without_saying_its_process_died(
        tmp_path: Path, make_git_repo) -> None:
    packet = write_packet(tmp_path / "crash", make_git_repo)
    packet_run = kill_when(packet, event("commit_created", ".01.a1"), {"AWP_FAULT_PAUSE": "after_commit:8"})
    binding = packet_assets(load_packet(packet), load_catalog(None)).binding
    instance = open_instance(packet)
    try:
        [run] = [r for r in instance.get_runs() if r.status in UNFINISHED]
        ledger_of(instance).close_run(run.run_id)  # as an `awp run` that lived through the outage stores its run's end
        history = ledger_of(instance).history(packet_run, binding.keys)
        assert ledger_of(instance).adopt(binding, history) == [f"{packet_run}.01.a1"]
        [record] = history.agent_runs["01"].records
        assert record.target.reason == OUTAGE_REASON and "died" not in record.target.reason
    finally:
        instance.dispose()


def _materialize(packet: Path, prompt: str, run_tags: dict[str, str],
                 launch: Launch | None = None) -> ExecuteInProcessResult:
    """A run of one prompt's asset, as the UI launches it (no `awp run` around it), or as the sensor does
    (`launch`: the launch it decided, as the run's config)."""
    compiled = packet_assets(load_packet(packet), load_catalog(None))
    instance = open_instance(packet)
    key = compiled.binding.key(prompt)
    try:
        job = compiled.definitions().resolve_job_def(job_name(compiled.packet))
        return job.execute_in_process(instance=instance, asset_selection=[key], tags=run_tags, raise_on_error=False,
                                      run_config=launch_run_config(key, launch) if launch else None)
    finally:
        instance.dispose()


def test_blocked_ends_the_agent_run_blocked_and_holds_its_dependents(tmp_path: Path, make_git_repo) -> None:
    packet = _packet(tmp_path / "p", make_git_repo,
                     {"01_a": _prompt("a.txt", _writes("a.txt", action="blocked", reason="needs a person")),
                      "02_b": _prompt("b.txt")}, agent_control=CONTROL)
    code, summary = _run(packet)
    assert code == 1
    status = assert_one_truth(packet, summary["packet_run"], {"01": "blocked", "02": "planned"}, "blocked", [],
                              summary)
    assert status["prompts"][0]["reason"] == "the agent is blocked: needs a person"
    assert status["totals"]["completed"] == 0  # blocked is not done
    remaining = awp("run", packet, "--remaining")
    assert remaining.exit_code == 1 and "01 blocked — the agent is blocked: needs a person" in remaining.output


def test_an_accepted_finish_ends_the_linear_run(tmp_path: Path, make_git_repo) -> None:
    done = {"writes": [{"path": "a.txt", "text": "a"}, {"path": "final.txt", "text": "f"}],
            "control": {"action": "finish", "reason": "everything is done"}}
    packet = _packet(tmp_path / "p", make_git_repo, {"01_a": _prompt("a.txt", done), "02_b": _prompt("b.txt"),
                                                     "03_c": _prompt("c.txt")}, agent_control=CONTROL)
    code, summary = _run(packet)
    assert code == 0, summary
    expected = {"01": "completed", "02": "cancelled", "03": "cancelled"}
    assert_one_truth(packet, summary["packet_run"], expected, "completed", [], summary)
    assert not (packet / "workspace" / "b.txt").exists()  # 02 did not run in the run that held it
    assert [m for m in git_log(packet / "workspace") if "AWP-Prompt: 02" in m] == []
    nothing = awp("run", packet, "--remaining")
    assert nothing.exit_code == 0 and f"nothing remains in packet run {summary['packet_run']}" in nothing.output


def test_a_repeat_request_is_not_done_and_its_next_iteration_is_due(tmp_path: Path, make_git_repo) -> None:
    packet = _packet(tmp_path / "p", make_git_repo,
                     {"01_a": _prompt("a.txt", _writes("a.txt", action="repeat", reason="more"),
                                      {"writes": [{"path": "final.txt", "text": "f"}]}),
                      "02_b": _prompt("b.txt")}, agent_control=CONTROL)
    code, summary = _run(packet, "--no-recovery")
    assert code == 1
    assert_one_truth(packet, summary["packet_run"], {"01": "waiting", "02": "planned"}, "running",
                     [("01", "iterate")], summary)
    code, rest = _run(packet, "--remaining")  # the same packet run goes on: 01 iterates, then 02 runs
    assert code == 0 and rest["packet_run"] == summary["packet_run"]
    assert_one_truth(packet, summary["packet_run"], {"01": "completed", "02": "completed"}, "completed", [])


def test_an_attempt_killed_after_its_commit_is_adopted_with_a_record(tmp_path: Path, make_git_repo) -> None:
    packet = write_packet(tmp_path / "crash", make_git_repo)
    packet_run = kill_when(packet, event("commit_created", ".01.a1"), {"AWP_FAULT_PAUSE": "after_commit:8"})
    code, summary = _run(packet, "--packet-run", packet_run)
    assert code == 0, summary
    adopted = next(o for o in summary["prompts"] if o["prompt"] == "01")
    assert adopted["message"] == "adopted: committed before its process died"
    status = assert_one_truth(packet, packet_run, {"01": "completed", "02": "completed"}, "completed", [], summary)
    [attempt] = status["prompts"][0]["attempts"]  # one Attempt, shown once
    assert (attempt["result"], attempt["adopted"]) == ("completed", True)
    [record] = stored_attempts(packet, packet_run)  # stored, not inferred
    assert record.adopted and record.commits[0].sha
    assert record.evidence == {"app": f"{record.commits[0].sha} (AWP-Attempt: {packet_run}.01.a1)"}


def test_ctrl_c_stops_the_packet_run_resumable_and_launches_nothing_then_resume_completes(tmp_path: Path,
                                                                                       make_git_repo) -> None:
    slow = {"messages": ["writing a.txt"], "delay_ms": 8000, "writes": [{"path": "a.txt", "text": "a\n"}]}
    packet = write_packet(tmp_path / "crash", make_git_repo, {"simulate": {"attempts": [slow, SLOW]}})
    proc = spawn(packet)
    try:
        assert wait_for(proc, lambda: any(e["type"] == "message_received" for e in _events(packet)))
        os.killpg(proc.pid, signal.SIGINT)
        assert proc.wait(timeout=120) == 130
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    [packet_run] = [p.name for p in (packet / ".awp" / "events").iterdir()]
    # The user's stop is a decision: stopped, resumable, and the sensor launches nothing until a resume.
    status = assert_one_truth(packet, packet_run, {"01": "stopped", "02": "planned"}, "stopped", [])
    assert status["reason"] == "resumable: 2 prompts"  # not failed: each still has budget
    assert (status["stop"]["by"], status["stop"]["resumable"]) == ("SIGINT", 2)
    resumed = subprocess.run([str(Path(os.sys.executable).parent / "awp"), "run", str(packet), "--packet-run",
                              packet_run, "--json"], capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert_one_truth(packet, packet_run, {"01": "completed", "02": "completed"}, "completed", [],
                     json.loads(resumed.stdout))


def _events(packet: Path) -> list[dict[str, Any]]:
    from reliability.crash import events

    return events(packet) if (packet / ".awp" / "events").exists() else []


def test_a_ui_run_and_its_retry_carry_only_their_packet_run_as_a_tag(tmp_path: Path, make_git_repo) -> None:
    """The Runs list shows each tag outside Dagster's namespace on a line of its own: a run of the UI and the
    retry that completes its packet run carry their packet run (its first compute tags it), no Attempt, mode,
    target or state; the packet lists the packet run (its index in the ledger), and `awp status` finds it there."""
    packet = _packet(tmp_path / "p", make_git_repo, {"01_a": _prompt("a.txt", {"writes": []}, _writes("a.txt"))})
    first = _materialize(packet, "01", {})
    assert not first.success
    packet_run = f"pr-{first.run_id[:8]}"
    retry = _materialize(packet, "01", {tags.PACKET_RUN: packet_run, "dagster/root_run_id": first.run_id,
                                        "dagster/parent_run_id": first.run_id})
    assert retry.success
    instance = open_instance(packet)
    try:
        for run_id in (first.run_id, retry.run_id):
            run = instance.get_run_by_id(run_id)
            assert run is not None
            assert {k: v for k, v in run.tags.items() if not k.startswith(("dagster/", ".dagster/"))} == {
                tags.PACKET_RUN: packet_run}
        assert ledger_of(instance).packet_runs(load_packet(packet).name) == [packet_run]
    finally:
        instance.dispose()
    assert_one_truth(packet, packet_run, {"01": "completed"}, "completed", [])
    assert json.loads(awp("status", packet, "--json").stdout)["packet_run"] == packet_run  # the newest, listed
