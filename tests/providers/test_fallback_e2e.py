"""Fallback end to end: `awp run` on a claude_code packet with two accounts; the first account's CLI
answers a rate limit (exit 0), the next Attempt runs on the second account and completes."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from provider_helpers import fake_claude_catalog

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))
from e2e_support import awp, git_log, stored_records  # noqa: E402

KEY_A = "sk-ant-e2e-account-a-scenario-ratelimit-0123456789"
KEY_B = "sk-ant-e2e-account-b-scenario-success-0123456789"


def _packet(root: Path, make_git_repo: Callable[[Path], Path]) -> tuple[Path, Path]:
    make_git_repo(root / "workspace")
    (root / "packet.yaml").write_text(yaml.safe_dump({
        "name": "fallback", "provider": "claude", "model": "haiku", "timeout": "2m",
        "accounts": ["claude-a", "claude-b"], "repos": {"work": {"path": "./workspace", "default": True}},
        "recovery": {"retry": {"base_delay_ms": 0, "max_delay_ms": 0, "jitter": False}}}))
    prompt = root / "prompts" / "01_greet.prompt.md"
    prompt.parent.mkdir()
    prompt.write_text("---\n" + yaml.safe_dump({"id": "01", "name": "Greet", "targets": ["work"],
                                                 "verify": {"files_exist": ["GREETING.md"]}})
                      + "---\n# Greet\n\nWrite GREETING.md.\n\nawp-fake-write: GREETING.md = hello\n")
    providers = root / "providers.yaml"
    providers.write_text(yaml.safe_dump(fake_claude_catalog(
        {name: {"provider": "claude", "credential_env": var, "config_dir": str(root / "cfg" / name)}
         for name, var in (("claude-a", "AWP_E2E_CLAUDE_A_KEY"), ("claude-b", "AWP_E2E_CLAUDE_B_KEY"))})))
    return root, providers


@pytest.mark.slow
def test_rate_limited_first_account_falls_back_to_the_second_and_completes(
        tmp_path: Path, make_git_repo: Callable[[Path], Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWP_E2E_CLAUDE_A_KEY", KEY_A)
    monkeypatch.setenv("AWP_E2E_CLAUDE_B_KEY", KEY_B)
    packet, providers = _packet(tmp_path / "pkt", make_git_repo)
    result = awp("run", packet, "--providers", providers, "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    [outcome] = report["prompts"]
    assert outcome["result"] == "completed"
    # Summed over the AgentRun's two Attempts (the rate-limited one reported nothing) and the packet run.
    assert outcome["usage"]["cost_usd"] == 0.0123 and outcome["usage"]["cached_input_tokens"] == 4000
    assert report["usage"] == outcome["usage"]
    records = stored_records(packet, report["packet_run"])
    assert [r["target"]["account"] for r in records] == ["claude-a", "claude-b"]
    assert [r["identity"]["mode"] for r in records] == ["run", "fallback"]
    first, second = records
    assert first["result"] == "provider_failed"
    assert first["failure"]["failure_class"] == "provider_rate_limit"
    assert first["failure"]["suggested_delay_ms"] > 3_000_000  # the reset time, an hour away
    assert "falling back" in second["target"]["reason"] and "claude-b" in second["target"]["reason"]
    assert second["session_id"] and second["result"] == "completed"
    # Telemetry as the fake CLI reported it: tokens, cache reads and its own cost.
    assert second["usage"] == {"input_tokens": 1600, "output_tokens": 250, "cached_input_tokens": 4000,
                               "reasoning_tokens": 0, "cost_usd": 0.0123, "cost_source": "provider"}
    assert (packet / "workspace" / "GREETING.md").read_text() == "hello\n"
    assert len(git_log(packet / "workspace")) == 2
    # Neither credential reached the stored events.
    events = "".join(p.read_text() for p in (packet / ".awp").rglob("*.jsonl"))
    assert KEY_A not in events and KEY_B not in events and "run_started" in events
