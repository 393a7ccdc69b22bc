"""`awp plan` shows the exact argv of each prompt's primary target, prompt as <prompt>, secrets masked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from awp_pipelines.cli import cli

SECRET = "sk-ant-plan-secret-0123456789abcdef"


def _packet(tmp: Path, provider: str, extra: dict | None = None) -> Path:
    root = tmp / "pkt"
    (root / "prompts").mkdir(parents=True)
    (root / "packet.yaml").write_text(yaml.safe_dump({"name": "argv", "provider": provider, **(extra or {})}))
    (root / "prompts" / "01_x.prompt.md").write_text("---\nid: '01'\n---\n# X\n\nDo it.\n")
    return root


def _plan(packet: Path, providers: Path, *args: str) -> dict:
    result = CliRunner().invoke(cli, ["plan", str(packet), "--providers", str(providers), "--json", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["prompts"][0]


def test_plan_argv_maps_model_effort_permission_and_tools_and_masks_secrets(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWP_PLAN_KEY", SECRET)
    providers = tmp_path / "providers.yaml"
    providers.write_text(yaml.safe_dump({
        "providers": {"agent": {"kind": "command", "command": f"my-agent --token {SECRET} --fast"},
                      "claude2": {"kind": "claude_code", "models": ["claude-x"]}},
        "accounts": {"a": {"provider": "agent", "credential_env": "AWP_PLAN_KEY"}}}))
    claude = _plan(_packet(tmp_path / "c", "claude2", {"model": "claude-x", "permission_mode": "auto",
                                                      "allowed_tools": ["Write", "Read"]}), providers)
    assert claude["argv"] == ["claude", "-p", "<prompt>", "--output-format", "stream-json", "--verbose",
                              "--model", "claude-x", "--permission-mode", "acceptEdits", "--allowedTools", "Write,Read"]
    command = _plan(_packet(tmp_path / "k", "agent", {"model": "m", "accounts": ["a"]}), providers)
    assert command["argv"][0] == "my-agent" and SECRET not in json.dumps(command)
    assert "[REDACTED]" in command["argv"]
    assert command["account_bindings"]["a"]["credential_env"] == "AWP_PLAN_KEY"


def test_the_simulated_kind_has_no_argv(tmp_path: Path) -> None:
    providers = tmp_path / "providers.yaml"
    providers.write_text("providers: {}\n")
    assert _plan(_packet(tmp_path, "simulated", {"model": "simulated-demo"}), providers)["argv"] is None
