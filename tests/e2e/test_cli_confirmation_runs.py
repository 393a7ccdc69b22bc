"""`cli_confirmation` and provenance end to end (`awp run`): an agent that names no model fails `require`
once, deterministically, its work not committed; a CLI that reports the model asked for completes, and
its record says which model it reported, with what permissions, on whose credential."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml
from e2e_support import awp, git_log, stored_records

FAKES = Path(__file__).resolve().parents[1] / "providers" / "fakes"


def _packet(root: Path, make_git_repo, manifest: dict) -> Path:  # type: ignore[no-untyped-def]
    make_git_repo(root / "workspace")
    (root / "packet.yaml").write_text(yaml.safe_dump({
        "name": "confirm", "timeout": "2m", "cli_confirmation": "require",
        "repos": {"work": {"path": "./workspace", "default": True}}, **manifest}))
    (root / "prompts").mkdir()
    front = {"id": "01", "name": "Greet", "verify": {"files_exist": ["GREETING.md"]}}
    (root / "prompts" / "01_greet.prompt.md").write_text(
        "---\n" + yaml.safe_dump(front) + "---\n# Greet\n\nWrite GREETING.md.\n\nawp-fake-write: GREETING.md = hello\n")
    return root


def _records(packet: Path, stdout: str) -> list[dict]:
    return stored_records(packet, json.loads(stdout)["packet_run"])


def test_require_fails_an_agent_that_names_no_model_once_and_commits_nothing(
        tmp_path: Path, make_git_repo) -> None:  # type: ignore[no-untyped-def]
    agent = tmp_path / "agent.py"
    agent.write_text("import sys\nsys.stdin.read()\nopen('GREETING.md', 'w').write('hello')\n")
    providers = tmp_path / "providers.yaml"
    providers.write_text(yaml.safe_dump({"providers": {"script": {"kind": "command",
                                                                  "command": f"{sys.executable} {agent}"}}}))
    packet = _packet(tmp_path / "p", make_git_repo, {"provider": "script", "model": "gpt-5"})
    result = awp("run", packet, "--providers", providers, "--json")
    assert result.exit_code == 1, result.output
    [record] = _records(packet, result.stdout)  # deterministic: no retry, no repair
    assert record["result"] == "provider_failed"
    assert record["failure"]["failure_class"] == "cli_confirmation_missing"
    assert record["provenance"]["reported_model"] is None
    assert len(git_log(packet / "workspace")) == 1  # the contract passed, but an unknown model did the work


def test_a_confirmed_model_is_on_the_record_with_permissions_and_the_clis_own_login(
        tmp_path: Path, make_git_repo, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-operator-login-scenario-success-0123456789")
    providers = tmp_path / "providers.yaml"
    providers.write_text(yaml.safe_dump({"providers": {"claude": {
        "kind": "claude_code", "command": str(FAKES / "claude"), "credential_env": "ANTHROPIC_API_KEY",
        "models": ["claude", "haiku"]}}}))
    packet = _packet(tmp_path / "p", make_git_repo, {"provider": "claude", "model": "claude-haiku-4-5",
                                                    "permission_mode": "auto", "allowed_tools": ["Read", "Write"]})
    result = awp("run", packet, "--providers", providers, "--json")
    assert result.exit_code == 0, result.output
    [record] = _records(packet, result.stdout)
    provenance = record["provenance"]
    assert provenance["reported_model"] == "claude-haiku-4-5" and provenance["model_confirmed"] is True
    assert (provenance["permission_mode"], provenance["allowed_tools"]) == ("auto", ["Read", "Write"])
    assert provenance["credential_source"].startswith("no account configured: the CLI's own login")
    assert provenance["cli_key_source"] == "ANTHROPIC_API_KEY"
    assert "sk-ant-operator" not in json.dumps(record)
