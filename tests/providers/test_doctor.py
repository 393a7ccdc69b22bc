"""`awp doctor PACKET`: CLIs with versions, credentials present but never printed, dirs, storage."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import responses
import yaml
from click.testing import CliRunner
from provider_helpers import FAKES
from responses.matchers import header_matcher

from awp_pipelines.cli import cli

SECRET = "sk-ant-doctor-secret-value-0123456789"


def _setup(tmp: Path, command: str, fallback_command: str | None = None) -> tuple[Path, Path]:
    packet = tmp / "pkt"
    (packet / "prompts").mkdir(parents=True)
    manifest = {"name": "doc", "provider": "claude", "model": "haiku", "accounts": ["claude-a"]}
    if fallback_command:
        manifest["fallback"] = [{"provider": "backup"}]
    (packet / "packet.yaml").write_text(yaml.safe_dump(manifest))
    (packet / "prompts" / "01_x.prompt.md").write_text("---\nid: '01'\n---\n# X\n")
    providers = {"claude": {"kind": "claude_code", "command": command, "credential_env": "ANTHROPIC_API_KEY",
                            "config_dir_env": "CLAUDE_CONFIG_DIR", "models": ["haiku"]}}
    if fallback_command:
        providers["backup"] = {"kind": "codex", "command": fallback_command}
    file = tmp / "providers.yaml"
    file.write_text(yaml.safe_dump({"providers": providers, "accounts": {"claude-a": {
        "provider": "claude", "credential_env": "AWP_DOCTOR_A_KEY", "config_dir": str(tmp / "cfg" / "a")}}}))
    return packet, file


def _doctor(packet: Path, providers: Path) -> tuple[int, dict, str]:
    result = CliRunner().invoke(cli, ["doctor", str(packet), "--providers", str(providers), "--json"])
    return result.exit_code, json.loads(result.stdout), result.output


def test_a_ready_packet_reports_versions_and_never_prints_the_credential(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWP_DOCTOR_A_KEY", SECRET)
    packet, providers = _setup(tmp_path, str(FAKES / "claude"))
    code, report, output = _doctor(packet, providers)
    assert code == 0, output
    by_what = {c["what"]: c for c in report["checks"]}
    assert by_what["cli"]["status"] == "ok" and "2.1.197" in by_what["cli"]["detail"]
    assert by_what["credential"]["status"] == "ok" and "AWP_DOCTOR_A_KEY" in by_what["credential"]["detail"]
    assert by_what["config dir"]["status"] == "ok" and by_what["storage"]["status"] == "ok"
    assert SECRET not in output


def test_a_missing_cli_and_credential_block_the_packet_with_fixes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWP_DOCTOR_A_KEY", raising=False)
    packet, providers = _setup(tmp_path, str(tmp_path / "no-claude-here"))
    code, report, _ = _doctor(packet, providers)
    assert code == 1 and not report["ok"]
    blocking = {c["what"]: c for c in report["checks"] if c["status"] == "blocking"}
    assert "npm install -g @anthropic-ai/claude-code" in blocking["cli"]["fix"]
    assert "export AWP_DOCTOR_A_KEY" in blocking["credential"]["fix"]


def test_a_broken_fallback_only_warns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWP_DOCTOR_A_KEY", SECRET)
    packet, providers = _setup(tmp_path, str(FAKES / "claude"), fallback_command=str(tmp_path / "no-codex"))
    code, report, _ = _doctor(packet, providers)
    assert code == 0
    [warning] = [c for c in report["checks"] if c["status"] == "warning" and c["what"] == "cli"]
    assert warning["subject"] == "backup"


def test_unreachable_storage_blocks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWP_DOCTOR_A_KEY", SECRET)
    packet, providers = _setup(tmp_path, str(FAKES / "claude"))
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text(yaml.safe_dump({"storage": {"postgres": {"postgres_db": {
        "username": "nobody", "password": "x", "hostname": "127.0.0.1", "db_name": "none", "port": 1}}}}))
    result = CliRunner().invoke(cli, ["doctor", str(packet), "--providers", str(providers), "--instance", str(home),
                                      "--json"])
    assert result.exit_code == 1
    [storage] = [c for c in json.loads(result.stdout)["checks"] if c["what"] == "storage"]
    assert storage["status"] == "blocking" and "dagster.yaml" in storage["fix"]


def test_a_stored_cooldown_shows_and_blocks_when_every_account_rests(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from awp_pipelines.core.decisions.rotation import cooldown_for
    from awp_pipelines.core.records.failures import FailureEnvelope
    from awp_pipelines.orchestration.ledger.factory import ledger_of
    from awp_pipelines.orchestration.ledger.instance import open_instance
    from awp_pipelines.orchestration.ledger.ledger import now_ms

    monkeypatch.setenv("AWP_DOCTOR_A_KEY", SECRET)
    packet, providers = _setup(tmp_path, str(FAKES / "claude"))
    instance = open_instance(packet)
    try:
        rest = cooldown_for("claude-a", FailureEnvelope.for_class(
            "provider_rate_limit", "usage limit", suggested_delay_ms=30 * 60_000), 60, now_ms())
        assert rest is not None
        ledger_of(instance).rest(rest)
    finally:
        instance.dispose()
    code, report, _ = _doctor(packet, providers)
    assert code == 1
    rest = [c for c in report["checks"] if c["what"] == "cooldown"]
    assert rest[0]["status"] == "warning" and "30 min" in rest[0]["detail"]
    assert rest[1]["status"] == "blocking" and "every account rests" in rest[1]["detail"]


def _http_setup(tmp: Path) -> tuple[Path, Path]:
    packet = tmp / "pkt"
    (packet / "prompts").mkdir(parents=True)
    (packet / "packet.yaml").write_text(yaml.safe_dump({"name": "doc", "provider": "router", "model": "m",
                                                        "accounts": ["router-a", "router-b"]}))
    (packet / "prompts" / "01_x.prompt.md").write_text("---\nid: '01'\n---\n# X\n")
    file = tmp / "providers.yaml"
    file.write_text(yaml.safe_dump({
        "providers": {"router": {"kind": "openai_http", "base_url": "http://router.test/v1", "models": ["m"]}},
        "accounts": {"router-a": {"provider": "router", "credential_env": "AWP_DOCTOR_ROUTER_A"},
                     "router-b": {"provider": "router", "credential_env": "AWP_DOCTOR_ROUTER_B"}}}))
    return packet, file


@responses.activate
def test_online_asks_each_accounts_endpoint_and_names_the_refused_key_without_printing_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWP_DOCTOR_ROUTER_A", SECRET)
    monkeypatch.setenv("AWP_DOCTOR_ROUTER_B", SECRET + "-b")
    packet, providers = _http_setup(tmp_path)
    responses.get("http://router.test/v1/models", match=[header_matcher({"Authorization": f"Bearer {SECRET}"})],
                  json={"data": []})
    responses.get("http://router.test/v1/models", status=401)
    offline, report, _ = _doctor(packet, providers)
    assert offline == 0 and not responses.calls  # without --online no request leaves the machine
    result = CliRunner().invoke(cli, ["doctor", str(packet), "--providers", str(providers), "--online", "--json"])
    endpoints = {c["subject"]: c for c in json.loads(result.stdout)["checks"] if c["what"] == "endpoint"}
    assert endpoints["router:router-a"]["status"] == "ok"
    assert endpoints["router:router-b"]["status"] == "blocking" and "401" in endpoints["router:router-b"]["detail"]
    assert endpoints["router:router-b"]["fix"] == "check the credential"
    assert result.exit_code == 1 and SECRET not in result.output


def _files(root: Path) -> set[Path]:
    return {p for p in root.rglob("*")}


def test_doctor_writes_nothing_a_missing_config_dir_is_reported_creatable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Doctor only looks: no config dir, no instance, nothing under HOME (it used to create the account's
    config dir while checking it)."""
    monkeypatch.setenv("AWP_DOCTOR_A_KEY", SECRET)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("AWP_DAGSTER_HOME", raising=False)
    packet, providers = _setup(tmp_path, str(FAKES / "claude"))
    before = _files(tmp_path)
    code, report, output = _doctor(packet, providers)
    assert code == 0, output
    assert _files(tmp_path) == before
    [folder] = [c for c in report["checks"] if c["what"] == "config dir"]
    assert folder["status"] == "ok" and "missing; the first Attempt creates it" in folder["detail"]
    [storage] = [c for c in report["checks"] if c["what"] == "storage"]
    assert storage["status"] == "ok" and "no instance yet" in storage["detail"]


def test_a_config_dir_that_cannot_be_created_blocks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from awp_pipelines.core.planning.provider_checks import check_dir

    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    assert check_dir("p:a", str(blocker)).status == "blocking"
    assert check_dir("p:a", str(blocker / "below")).status == "blocking"
    assert not (blocker / "below").exists()


def test_a_command_agent_asked_for_its_version_gets_no_credential_and_what_it_says_is_redacted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`command` agents print what they like on `--version`: this one says its whole environment on one line.
    It is handed no credential (neither its account's nor any other variable of the operator's), and a value
    it knows some other way (here: written into its script) is redacted from the report."""
    plain = "plain-account-credential-5b8e"  # no secret pattern finds it
    monkeypatch.setenv("AWP_DOCTOR_A_KEY", plain)
    monkeypatch.setenv("DAGSTER_PG_PASSWORD", "operator-database-password-1e9c")
    agent = tmp_path / "say-env"
    agent.write_text(f'#!/bin/sh\necho "say-env 1.0 known={plain}" $(env | tr "\\n" " ")\n')
    agent.chmod(0o755)
    providers = tmp_path / "providers.yaml"
    providers.write_text(yaml.safe_dump({
        "providers": {"cmd": {"kind": "command", "command": str(agent)}},
        "accounts": {"cmd-a": {"provider": "cmd", "credential_env": "AWP_DOCTOR_A_KEY"}}}))
    result = CliRunner().invoke(cli, ["doctor", "--providers", str(providers), "--json"])
    [version] = [c for c in json.loads(result.stdout)["checks"] if c["what"] == "cli" and c["subject"] == "cmd"]
    assert version["status"] == "ok" and "say-env 1.0 known=[REDACTED]" in version["detail"]
    assert "PATH=" in version["detail"]  # it said its environment: the basics a program needs
    assert "AWP_DOCTOR_A_KEY" not in version["detail"] and "PASSWORD" not in version["detail"]
    assert plain not in result.output and "operator-database-password" not in result.output
