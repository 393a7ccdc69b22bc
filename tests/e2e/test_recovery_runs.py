"""Retry, fallback and repair in process: each decision is a new Attempt in a new Dagster run."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from dagster import AssetKey, RunsFilter
from e2e_support import awp, decided_launch, git_log, sent_prompt, stored_attempts, stored_records

from awp_pipelines.orchestration.ledger.history import attempt_records
from awp_pipelines.orchestration.ledger.instance import open_instance
from awp_pipelines.orchestration.ledger.packet_index import runs_of_packet

REPO_ROOT = Path(__file__).resolve().parents[2]
# Attempts per prompt of Prompt Runner's recovery walkthrough, and the mode of each.
RECOVERY_MATRIX = {
    "01": ["run", "retry"], "02": ["run", "repair"], "03": ["run"], "04": ["run", "retry"],
    "05": ["run", "retry", "retry"], "06": ["run"], "07": ["run", "retry", "repair"], "08": ["run", "retry"],
    "09": ["run"],
}


def _oldest_first(instance, tags: dict[str, str]) -> list:  # type: ignore[no-untyped-def]
    return list(reversed(instance.get_runs(filters=RunsFilter(tags=tags))))  # get_runs lists newest first


def test_simulated_recovery_packet_completes_every_prompt_with_prompt_runners_recovery(compat_packet) -> None:
    packet = compat_packet("simulated_recovery_packet")
    result = awp("run", packet, "--json")
    assert result.exit_code == 0, result.output
    outcomes = json.loads(result.stdout)["prompts"]
    assert [o["result"] for o in outcomes] == ["completed"] * 9
    packet_run = outcomes[0]["attempt"].split(".")[0]
    for prompt, modes in RECOVERY_MATRIX.items():
        records = stored_records(packet, packet_run, prompt)
        assert [r["identity"]["mode"] for r in records] == modes, prompt
        assert records[-1]["result"] == "completed"
    # 03 and 09 recovered inside their one Attempt by resuming the provider session.
    assert stored_records(packet, packet_run, "03")[0]["resumes"] == 1
    # 06: the provider reported an error, the verifier passed: complete, with the error kept as provenance.
    [override] = stored_records(packet, packet_run, "06")
    assert override["provider_failure"]["failure_class"] == "provider_runtime_claim"
    # 07's repair prompt carried the unmet item and the last runtime error.
    repair = stored_records(packet, packet_run, "07")[-1]
    assert "## Repair Instructions" in sent_prompt(repair)
    assert "draft.meta.txt" in sent_prompt(repair) and "provider_runtime_claim" in sent_prompt(repair)
    assert len(git_log(packet / "workspace")) == 10


def test_repair_and_retry_runs_name_their_parent_run_and_reason(compat_packet) -> None:
    packet = compat_packet("simulated_recovery_packet")
    chosen = awp("run", packet, "02")  # its upstream 01 is not completed in a new packet run: run, with a warning
    assert chosen.exit_code == 0 and "02 runs as you selected it, though its upstream 01 is not" in chosen.stderr
    instance = open_instance(packet)
    try:
        runs = list(reversed(instance.get_runs()))  # 02, then its repair
        assert runs[1].tags["dagster/parent_run_id"] == runs[0].run_id
        # Run tags are what a user filters on; the Attempt (mode, reason, agent run) is its record.
        first, repair = (attempt_records(instance, r.run_id)[-1] for r in runs)
        assert [first.identity.mode, repair.identity.mode] == ["run", "repair"]
        assert "unmet verifier items" in repair.target.reason and repair.identity.parent_run == runs[0].run_id
        assert first.identity.agent_run == repair.identity.agent_run
        assert not {"awp/reason", "awp/agent_run", "awp/mode", "awp/prompt"} & set(runs[1].tags)
    finally:
        instance.dispose()


def test_unmeetable_contract_ends_verification_failed_after_the_repair_budget(compat_packet) -> None:
    packet = compat_packet("single_repo_packet")
    result = awp("run", packet, "01", "--provider", "simulated", "--json")
    assert result.exit_code == 1
    [outcome] = json.loads(result.stdout)["prompts"]
    assert outcome["result"] == "verification_failed"
    assert outcome["attempt"].endswith(".a3")  # the run, then repair.max_attempts = 2 repairs
    assert "after 2 repair(s)" in outcome["decision"]
    assert len(git_log(packet / "workspace")) == 1


def _fallback_packet(root: Path, make_git_repo) -> Path:  # type: ignore[no-untyped-def]
    make_git_repo(root / "workspace")
    (root / "packet.yaml").write_text(yaml.safe_dump({
        "name": "rotate", "provider": "simulated", "accounts": ["sim-a", "sim-b"],
        "fallback": [{"provider": "backup", "model": "backup-model"}],
        "repos": {"app": {"path": "./workspace", "default": True}}}))
    limited = {"error": {"kind": "provider_rate_limit", "message": "You've hit your limit"}}
    prompt = {"id": "01", "verify": {"files_exist": ["done.txt"]},
              "simulate": {"attempts": [limited, limited, {"writes": [{"path": "done.txt", "text": "ok"}]}]}}
    (root / "prompts").mkdir()
    (root / "prompts" / "01_work.prompt.md").write_text(f"---\n{yaml.safe_dump(prompt)}---\n# Work\n")
    return root


def test_rate_limit_falls_back_to_the_next_account_then_the_next_provider(tmp_path: Path, make_git_repo) -> None:
    providers = tmp_path / "providers.yaml"
    providers.write_text(yaml.safe_dump({
        "providers": {"backup": {"kind": "simulated"}},
        "accounts": {"sim-a": {"provider": "simulated"}, "sim-b": {"provider": "simulated"}}}))
    packet = _fallback_packet(tmp_path / "rotate", make_git_repo)
    result = awp("run", packet, "--providers", providers)
    assert result.exit_code == 0, result.output
    instance = open_instance(packet)
    try:
        runs = list(reversed(runs_of_packet(instance, "rotate")))
        targets = [(rec.identity.mode, rec.target.provider, rec.target.account)
                   for rec in (attempt_records(instance, r.run_id)[0] for r in runs)]
        assert targets == [("run", "simulated", "sim-a"), ("fallback", "simulated", "sim-b"),
                           ("fallback", "backup", None)]
        assert "provider_rate_limit" in attempt_records(instance, runs[1].run_id)[0].target.reason
        meta = instance.get_latest_materialization_event(AssetKey(["rotate", "01_work"])).asset_materialization.metadata
        assert meta["awp/target"].value == "backup/backup-model"  # provider/account/model in one value
        assert meta["awp/mode"].value == "fallback"
    finally:
        instance.dispose()
    assert "AWP-Provider: backup" in git_log(packet / "workspace")[0]


@pytest.mark.slow
def test_the_demo_packet_completes_all_three_prompts(tmp_path: Path) -> None:
    demo = tmp_path / "demo"
    shutil.copytree(REPO_ROOT / "assets" / "demo", demo, ignore=shutil.ignore_patterns("workspace", ".awp"))
    subprocess.run(["bash", str(demo / "setup.sh")], check=True, capture_output=True)
    result = awp("run", demo, "--json")
    assert result.exit_code == 0, result.output
    attempts = [o["attempt"].rsplit(".", 1)[1] for o in json.loads(result.stdout)["prompts"]]
    assert attempts == ["a1", "a2", "a2"]


def test_a_prompt_whose_upstream_recovers_runs_after_the_repair(tmp_path: Path, make_git_repo) -> None:
    """02 waits on 01: Dagster skips it when 01 fails, and it starts once 01's repair completed."""
    root = tmp_path / "chain"
    make_git_repo(root / "workspace")
    (root / "packet.yaml").write_text(yaml.safe_dump({"name": "chain", "provider": "simulated",
                                                      "repos": {"app": {"path": "./workspace", "default": True}}}))
    (root / "prompts").mkdir()
    first = {"verify": {"contains": [{"path": "a.txt", "text": "done"}]},
             "simulate": {"attempts": [{"writes": [{"path": "a.txt", "text": "half"}]},
                                       {"writes": [{"path": "a.txt", "text": "done"}]}]}}
    second = {"verify": {"files_exist": ["b.txt"]}, "simulate": {"attempts": [{"writes": [{"path": "b.txt"}]}]}}
    for name, front in (("01_first", first), ("02_second", second)):
        (root / "prompts" / f"{name}.prompt.md").write_text(f"---\n{yaml.safe_dump(front)}---\nWork.\n")
    result = awp("run", root, "--json")
    assert result.exit_code == 0, result.output
    instance = open_instance(root)
    try:
        runs = list(reversed(runs_of_packet(instance, "chain")))
        assert len(runs[0].asset_selection or ()) == 2  # the selection in one run; 02 was skipped there
        assert [decided_launch(r)[:2] for r in runs[1:]] == [("01", "repair"), ("02", "run")]
        assert attempt_records(instance, runs[2].run_id)[0].target.reason == "upstream 01 completed"
    finally:
        instance.dispose()
    trailers = [m for m in git_log(root / "workspace") if "AWP-Attempt:" in m]
    assert [m.split("AWP-Prompt: ")[1].split()[0] for m in trailers] == ["02", "01"]  # newest first


def test_a_rate_limit_rests_the_account_and_the_next_packet_run_starts_on_another(tmp_path: Path,
                                                                                  make_git_repo) -> None:
    """The cooldown is stored in the instance: a later `awp run` (a new packet run) honours it."""
    providers = tmp_path / "providers.yaml"
    providers.write_text(yaml.safe_dump({"accounts": {"sim-a": {"provider": "simulated", "cooldown_s": 3600},
                                                      "sim-b": {"provider": "simulated"}}}))
    root = tmp_path / "rest"
    make_git_repo(root / "workspace")
    (root / "packet.yaml").write_text(yaml.safe_dump({
        "name": "rest", "provider": "simulated", "accounts": ["sim-a", "sim-b"],
        "repos": {"app": {"path": "./workspace", "default": True}}}))
    limited = {"error": {"kind": "provider_rate_limit", "message": "You've hit your limit"}}
    front = {"verify": {"files_exist": ["done.txt"]},
             "simulate": {"attempts": [limited, {"writes": [{"path": "done.txt", "text": "ok"}]}]}}
    (root / "prompts").mkdir()
    (root / "prompts" / "01_work.prompt.md").write_text(f"---\n{yaml.safe_dump(front)}---\n# Work\n")
    first = awp("run", root, "--providers", providers, "--json")
    assert first.exit_code == 0, first.output
    (root / "workspace" / "done.txt").unlink()
    subprocess.run(["git", "-C", str(root / "workspace"), "commit", "-qam", "reset"], check=True)
    # The next packet run's agent works at once: were sim-b limited too, both accounts would rest and the AgentRun
    # would wait for the first one back (an hour) rather than start on a resting account.
    front["simulate"] = {"attempts": [{"writes": [{"path": "done.txt", "text": "ok"}]}]}
    (root / "prompts" / "01_work.prompt.md").write_text(f"---\n{yaml.safe_dump(front)}---\n# Work\n")
    second = awp("run", root, "--providers", providers, "--json")
    # Its first Attempt already runs on sim-b: sim-a still rests after the first packet run's limit.
    records = stored_attempts(root, json.loads(second.stdout)["packet_run"])
    assert [(r.identity.mode, r.target.account) for r in records][0] == ("run", "sim-b")
    assert "sim-a is resting" in records[0].target.reason
