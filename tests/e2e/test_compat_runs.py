"""Prompt Runner's own packets run to completion in process, one commit per prompt with AWP trailers."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
import sqlalchemy as sa
from dagster import DagsterRunStatus
from e2e_support import awp, git_log, git_status, postgres_instance_dir, runs_of_packet, write_overlay

from awp_pipelines.core.packet.packet import load_packet
from awp_pipelines.orchestration.compile.naming import prompt_key
from awp_pipelines.orchestration.ledger.factory import ledger_of
from awp_pipelines.orchestration.ledger.instance import open_instance

SINGLE_REPO_OVERLAY = {
    "01": {"attempts": [{"messages": ["Creating hello.txt"],
                         "writes": [{"path": "hello.txt", "text": "Hello from Prompt Runner\n"}]}]},
    "02": {"attempts": [{"writes": [{"path": "SUMMARY.md", "text": "# Summary\n\nHello from Prompt Runner\n"}]}]},
}
MULTI_REPO_OVERLAY = {
    "01": {"attempts": [{"writes": [{"repo": "alpha", "path": "NOTES.md", "text": "alpha ok\n"},
                                    {"repo": "beta", "path": "NOTES.md", "text": "beta ok\n"}]}]},
    "02": {"attempts": [{"writes": [{"repo": "alpha", "path": "CROSS_REPO_SUMMARY.md",
                                     "text": "# Cross Repo Summary\n\nalpha ok\nbeta ok\n"}]}]},
}


def _assert_trailers(message: str, prompt: str, provider: str = "simulated") -> None:
    assert f"AWP-Prompt: {prompt}" in message
    assert f"AWP-Provider: {provider}" in message
    for key in ("AWP-Packet:", "AWP-Agent-Run:", "AWP-Attempt:", "AWP-Account:", "AWP-Model:"):
        assert key in message


def _run_authoring(packet: Path, *extra: str) -> None:
    result = awp("run", packet, *extra)
    assert result.exit_code == 0, result.output
    repo = packet / "workspace"
    boundaries = (repo / "RUNTIME_BOUNDARIES.md").read_text()
    assert "Prompt Runner owns packet orchestration." in boundaries
    assert "Agent Session Manager owns provider session lifecycle." in boundaries
    checklist = (repo / "EXECUTION_CHECKLIST.md").read_text()
    assert "Define verifier-owned completion contracts." in checklist
    messages = git_log(repo)
    assert len(messages) == 3  # README + one commit per prompt
    assert messages[1].startswith("docs: add runtime boundaries summary")
    assert messages[0].startswith("docs: add execution checklist")
    _assert_trailers(messages[1], "01")
    _assert_trailers(messages[0], "02")
    assert git_status(repo) == ""


def test_authoring_packet_runs_to_completion_with_one_trailed_commit_per_prompt(compat_packet) -> None:
    packet = compat_packet("authoring_packet")
    _run_authoring(packet)
    instance = open_instance(packet)
    try:
        # Both prompts in one run, as "Materialize all" launches them; Dagster's deps order them.
        [run] = runs_of_packet(instance, "authoring-packet")
        assert len(run.asset_selection or ()) == 2 and run.status == DagsterRunStatus.SUCCESS
        # Listed with the code location's job in the UI, as launched by awp run.
        assert run.tags[".dagster/repository"] == "__repository__@awp_pipelines"
        assert ledger_of(instance).runners([run.run_id])  # its `awp run` noted itself as the run's driver
        event = instance.get_latest_materialization_event(prompt_key(load_packet(packet), "02"))
        assert event is not None
        meta = event.asset_materialization.metadata
        assert meta["awp/result"].value == "completed"
        assert meta["awp/target"].value.startswith("simulated/")
        record = meta["awp/record"].value
        assert record["commits"][0]["status"] == "committed"
        assert record["verifier"]["items"] and all(i["passed"] for i in record["verifier"]["items"])
        # The transcript names its events file relative to the packet, the same on every machine.
        found = re.search(r"relative to the packet\): `([^`]+)`", meta["awp/transcript"].value)
        assert found is not None and not Path(found[1]).is_absolute() and (packet / found[1]).is_file()
    finally:
        instance.dispose()


def test_single_repo_packet_runs_on_forced_simulated_provider_with_overlay(compat_packet, tmp_path: Path) -> None:
    packet = compat_packet("single_repo_packet")
    overlay = write_overlay(tmp_path / "overlay.yaml", SINGLE_REPO_OVERLAY)
    result = awp("run", packet, "--provider", "simulated", "--simulate-overlay", overlay)
    assert result.exit_code == 0, result.output
    repo = packet / "workspace"
    assert (repo / "hello.txt").read_text() == "Hello from Prompt Runner\n"
    messages = git_log(repo)
    assert [m.splitlines()[0] for m in messages[:2]] == ["docs: add summary file", "docs: add hello file"]
    _assert_trailers(messages[0], "02")
    # The packet asked for codex; the CLI flag is the last precedence layer and wins.
    assert "AWP-Model: gpt-5.6-luna" in messages[0]


def test_multi_repo_packet_commits_each_target_repo(compat_packet, tmp_path: Path) -> None:
    packet = compat_packet("multi_repo_packet")
    overlay = write_overlay(tmp_path / "overlay.yaml", MULTI_REPO_OVERLAY)
    result = awp("run", packet, "--provider", "simulated", "--simulate-overlay", overlay)
    assert result.exit_code == 0, result.output
    alpha, beta = packet / "repos" / "alpha", packet / "repos" / "beta"
    assert (alpha / "CROSS_REPO_SUMMARY.md").read_text().endswith("alpha ok\nbeta ok\n")
    alpha_log, beta_log = git_log(alpha), git_log(beta)
    assert len(alpha_log) == 3 and len(beta_log) == 2
    _assert_trailers(beta_log[0], "01")
    _assert_trailers(alpha_log[0], "02")
    assert git_status(alpha) == "" and git_status(beta) == ""


def test_unmet_contract_without_overlay_fails_and_leaves_no_commit(compat_packet) -> None:
    packet = compat_packet("single_repo_packet")
    # No simulate block: the simulated provider does nothing and the verifier refuses completion.
    result = awp("run", packet, "--provider", "simulated")
    assert result.exit_code == 1
    assert "verification_failed" in result.output
    assert len(git_log(packet / "workspace")) == 1


def test_no_commit_flag_verifies_but_leaves_the_work_uncommitted(compat_packet) -> None:
    packet = compat_packet("authoring_packet")
    result = awp("run", packet, "01", "--no-commit")
    assert result.exit_code == 0, result.output
    repo = packet / "workspace"
    assert len(git_log(repo)) == 1
    assert "RUNTIME_BOUNDARIES.md" in git_status(repo)


def test_dry_run_prints_the_plan_and_runs_nothing(compat_packet) -> None:
    packet = compat_packet("authoring_packet")
    result = awp("run", packet, "--dry-run", "--json")
    assert result.exit_code == 0, result.output
    assert '"provider": "simulated"' in result.output
    assert not (packet / "workspace" / "RUNTIME_BOUNDARIES.md").exists()
    assert not (packet / ".awp").exists()


def test_remaining_skips_prompts_completed_in_stored_history(compat_packet) -> None:
    packet = compat_packet("authoring_packet")
    assert awp("run", packet, "01").exit_code == 0
    result = awp("run", packet, "--remaining")
    assert result.exit_code == 0, result.output
    assert "[0/1 done] 02" in result.output and "01 " not in result.output.split("[0/1 done]")[1]


@pytest.mark.postgres
def test_authoring_packet_runs_with_the_instance_on_postgres(compat_packet, fresh_pg_database: sa.URL,
                                                             tmp_path: Path) -> None:
    packet = compat_packet("authoring_packet")
    home = postgres_instance_dir(tmp_path / "pg-home", fresh_pg_database)
    _run_authoring(packet, "--instance", str(home))
    engine = sa.create_engine(fresh_pg_database, poolclass=sa.pool.NullPool)
    with engine.connect() as conn:
        stored = conn.execute(sa.text("SELECT count(*) FROM runs")).scalar()
    engine.dispose()
    assert stored == 1  # one run holds both prompts
    assert not (packet / ".awp" / "dagster" / "history").exists()


@pytest.mark.postgres
def test_single_and_multi_repo_packets_run_with_the_instance_on_postgres(
        compat_packet: Callable[[str], Path], fresh_pg_database: sa.URL, tmp_path: Path) -> None:
    home = postgres_instance_dir(tmp_path / "pg-home", fresh_pg_database)
    for name, overlay in (("single_repo_packet", SINGLE_REPO_OVERLAY), ("multi_repo_packet", MULTI_REPO_OVERLAY)):
        packet = compat_packet(name)
        file = write_overlay(tmp_path / f"{name}.yaml", overlay)
        result = awp("run", packet, "--provider", "simulated", "--simulate-overlay", file, "--instance", home)
        assert result.exit_code == 0, result.output
    instance = open_instance(tmp_path, home)
    try:
        assert len(instance.get_runs()) == 2  # one run per packet: every prompt completed first time
    finally:
        instance.dispose()


def test_a_provider_whose_cli_is_missing_is_refused_before_any_run_starts(compat_packet, tmp_path,
                                                                           monkeypatch) -> None:
    packet = compat_packet("claude_packet")
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))  # no `claude` anywhere
    result = awp("run", packet)
    assert result.exit_code == 2
    assert "prompt_runner_packet.md" in result.output and "claude_code" in result.output
    assert "npm install -g @anthropic-ai/claude-code" in result.output
    assert not (packet / ".awp").exists()
