"""With `isolation: none` (in the sandbox the agent is never root), as root, a fallback target whose
permission mode its CLI refuses (Claude Code's bypass without IS_SANDBOX=1) is only a warning before the run,
since the primary may complete; when the AgentRun falls back to it, that Attempt fails once, deterministically,
and nothing retries it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml
from e2e_support import awp, stored_records

FAKES = Path(__file__).resolve().parents[1] / "providers" / "fakes"
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root: what CI and containers run as")


def test_a_root_refused_fallback_fails_once_and_is_not_retried(
        tmp_path: Path, make_git_repo, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delenv("IS_SANDBOX", raising=False)
    packet = tmp_path / "p"
    make_git_repo(packet / "workspace")
    (packet / "packet.yaml").write_text(yaml.safe_dump({
        "name": "rootfb", "provider": "simulated", "permission_mode": "bypass",
        "fallback": [{"provider": "claude", "model": "claude-haiku-4-5"}],
        "recovery": {"retry": {"base_delay_ms": 0, "max_delay_ms": 0, "jitter": False}},
        "repos": {"work": {"path": "./workspace", "default": True}}}))
    (packet / "prompts").mkdir()
    front = {"id": "01", "name": "Greet", "verify": {"files_exist": ["GREETING.md"]},
             "simulate": {"attempts": [{"error": {"kind": "provider_rate_limit"}}]}}
    (packet / "prompts" / "01_greet.prompt.md").write_text("---\n" + yaml.safe_dump(front) + "---\n# Greet\n")
    providers = tmp_path / "providers.yaml"
    providers.write_text(yaml.safe_dump({"providers": {"claude": {
        "kind": "claude_code", "command": str(FAKES / "claude"), "models": ["claude"], "isolation": "none"}}}))
    doctor = awp("doctor", packet, "--providers", providers, "--json")
    [root] = [c for c in json.loads(doctor.stdout)["checks"] if c["what"] == "root"]
    assert root["status"] == "warning" and "IS_SANDBOX" in root["fix"]
    result = awp("run", packet, "--providers", providers, "--json")
    assert result.exit_code == 1, result.output
    records = stored_records(packet, json.loads(result.stdout)["packet_run"])
    assert [(r["identity"]["mode"], r["target"]["provider"], r["failure"]["failure_class"]) for r in records] == [
        ("run", "simulated", "provider_rate_limit"), ("fallback", "claude", "provider_config_claim")]
    refused = records[1]["failure"]
    assert refused["provider_code"] == "root_permission_mode" and not refused["retryable"]
    assert "IS_SANDBOX" in refused["message"]
