"""An Attempt's provenance: tags, record, events — and no secret or AWP state in anything it writes."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml
from dagster import AssetKey
from e2e_support import attempt_records, awp, git_log, runs_of_packet, write_overlay

from awp_pipelines.core.packet.packet import load_packet
from awp_pipelines.orchestration.compile.naming import prompt_key
from awp_pipelines.orchestration.ledger.factory import ledger_of
from awp_pipelines.orchestration.ledger.instance import open_instance

SECRET = "sk-ant-api03-THIS-IS-A-TEST-SECRET-0123456789"


def _packet_inside_repo(root: Path, make_git_repo) -> Path:  # type: ignore[no-untyped-def]
    make_git_repo(root)
    (root / "packet.yaml").write_text(yaml.safe_dump({
        "name": "inside", "provider": "simulated", "repos": {"app": {"path": ".", "default": True}}}))
    prompt = {"id": "01", "accounts": ["sim-a"], "commit": "docs: add note",
              "verify": {"files_exist": ["NOTE.md"]}}
    (root / "prompts").mkdir()
    (root / "prompts" / "01_note.prompt.md").write_text(f"---\n{yaml.safe_dump(prompt)}---\n# Note\n")
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(root), "commit", "-qm", "packet"], check=True)
    return root


@pytest.fixture
def providers_file(tmp_path: Path) -> Path:
    file = tmp_path / "providers.yaml"
    file.write_text(yaml.safe_dump({"accounts": {"sim-a": {"provider": "simulated",
                                                           "credential_env": "AWP_TEST_SIM_KEY"}}}))
    return file


def test_attempt_writes_no_secret_and_never_commits_its_own_state(tmp_path: Path, make_git_repo, providers_file,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWP_TEST_SIM_KEY", SECRET)
    root = _packet_inside_repo(tmp_path / "repo", make_git_repo)
    # The agent echoes its credential (the overlay plays the agent; a packet holding a key is refused).
    overlay = write_overlay(tmp_path / "overlay.yaml", {"01": {"attempts": [
        {"messages": [f"my key is {SECRET}"], "writes": [{"path": "NOTE.md", "text": "note\n"}]}]}})
    result = awp("run", root, "--providers", providers_file, "--simulate-overlay", overlay)
    assert result.exit_code == 0, result.output
    tracked = subprocess.run(["git", "-C", str(root), "ls-files"], capture_output=True, text=True).stdout
    assert ".awp" not in tracked and "NOTE.md" in tracked
    assert "AWP-Account: sim-a" in git_log(root)[0]
    events = list((root / ".awp" / "events").rglob("*.jsonl"))
    assert events and all(SECRET not in f.read_text() for f in events)
    assert "[REDACTED]" in events[0].read_text()
    instance = open_instance(root)
    try:
        [run] = runs_of_packet(instance, "inside")
        assert attempt_records(instance, run.run_id)[0].target.account == "sim-a"
        assert all(SECRET not in value for value in run.tags.values())
        event = instance.get_latest_materialization_event(AssetKey(["inside", "01_note"]))
        stored = str(event.asset_materialization.metadata)
        assert SECRET not in stored
        assert event.asset_materialization.metadata["awp/target"].value.split("/")[1] == "sim-a"
    finally:
        instance.dispose()


def test_run_tags_and_record_name_the_attempt_its_agent_run_and_mode(compat_packet) -> None:
    packet = compat_packet("authoring_packet")
    assert awp("run", packet, "01").exit_code == 0
    instance = open_instance(packet)
    try:
        [run] = instance.get_runs()
        tags = run.tags
        assert attempt_records(instance, run.run_id)[0].identity.mode == "run"
        assert ledger_of(instance).packet_runs("authoring-packet") == [tags["awp/packet_run"]]
        assert attempt_records(instance, run.run_id)[0].identity.attempt_id == f"{tags['awp/packet_run']}.01.a1"
        key = prompt_key(load_packet(packet), "01")
        meta = instance.get_latest_materialization_event(key).asset_materialization.metadata
        record = meta["awp/record"].value
        assert record["identity"]["agent_run"] == f"{tags['awp/packet_run']}.01"
        assert record["identity"]["attempt_id"] == f"{tags['awp/packet_run']}.01.a1" == meta["awp/attempt"].value
        assert record["identity"]["dagster_run"] == run.run_id
        assert record["checkpoint"]["app"] and record["commits"][0]["sha"]
        assert "Transcript" in meta["awp/transcript"].value or meta["awp/transcript"].value
    finally:
        instance.dispose()


def test_attempt_numbers_are_counted_from_stored_history_per_agent_run(compat_packet) -> None:
    """Two runs of one prompt in the same packet run are attempts 1 and 2: the simulated provider plays
    attempts[1] the second time, as it would after a restart of the process."""
    packet = compat_packet("simulated_recovery_packet")
    first = awp("run", packet, "01", "--no-recovery", "--json")
    assert first.exit_code == 1 and "provider_capacity" in first.output
    packet_run = json.loads(first.stdout)["prompts"][0]["attempt"].rsplit(".", 2)[0]
    second = awp("run", packet, "01", "--packet-run", packet_run, "--no-recovery", "--json")
    assert second.exit_code == 0, second.output
    assert json.loads(second.stdout)["prompts"][0]["attempt"] == f"{packet_run}.01.a2"
    assert (packet / "workspace" / "retry.txt").read_text() == "retry ok"


def test_a_cli_profile_reaches_the_attempt_through_the_resolved_plan(tmp_path: Path, make_git_repo) -> None:
    from awp_pipelines.core.packet.home_profile import profiles_dir

    profiles_dir().mkdir(parents=True, exist_ok=True)
    (profiles_dir() / "sim.md").write_text("---\nprovider: simulated\nmodel: simulated-from-profile\n---\n")
    root = tmp_path / "plain"
    make_git_repo(root / "workspace")
    (root / "packet.yaml").write_text("name: plain\nrepos:\n  app: {path: ./workspace, default: true}\n")
    (root / "prompts").mkdir()
    (root / "prompts" / "01_x.prompt.md").write_text(
        "---\nverify: {files_exist: [x.txt]}\nsimulate: {attempts: [{writes: [{path: x.txt, text: x}]}]}\n---\nx\n")
    result = awp("run", root, "--profile", "sim")
    assert result.exit_code == 0, result.output
    instance = open_instance(root)
    try:
        [run] = instance.get_runs()
        meta = instance.get_latest_materialization_event(AssetKey(["plain", "01_x"])).asset_materialization.metadata
        assert meta["awp/target"].value.endswith("/simulated-from-profile")
    finally:
        instance.dispose()


def test_awp_run_refuses_a_packet_that_holds_a_secret(tmp_path: Path, make_git_repo) -> None:
    root = _packet_inside_repo(tmp_path / "repo", make_git_repo)
    note = root / "prompts" / "01_note.prompt.md"
    note.write_text(note.read_text() + f"\nUse the key {SECRET} to publish.\n")
    result = awp("run", root)
    assert result.exit_code == 2
    assert "01_note.prompt.md" in result.output and "refusing to run" in result.output
    assert SECRET not in result.output and not (root / "NOTE.md").exists()
