"""The real Claude Code CLI (npm @anthropic-ai/claude-code, pinned in install_real_clis.sh) against a local
fake Messages API through ANTHROPIC_BASE_URL: success, 429 with retry-after, 401 and 529 each classified,
the errors acted on from the CLI's own `api_retry` events within seconds, not after its ten retries."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest
from fake_apis import REPLY, fake_api
from provider_helpers import real_cli, sink, types

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))

from awp_pipelines.core.packet.providers_config import AccountBinding, ProviderSpec
from awp_pipelines.core.providers.base import ProviderRequest
from awp_pipelines.core.providers.claude_code import ClaudeCodeAdapter
from awp_pipelines.core.providers.process import group_alive

KEY = "sk-ant-api03-real-cli-test-key-0123456789abcdef"


@pytest.fixture(scope="module")
def claude() -> Path:
    return real_cli("claude")


def _providers_file(tmp: Path, claude: Path, accounts: dict[str, tuple[str, str]]) -> Path:
    """providers.yaml for the real CLI: each account `name → (credential variable, base_url)`."""
    import yaml

    file = tmp / "providers.yaml"
    file.write_text(yaml.safe_dump({
        "providers": {"claude": {"kind": "claude_code", "command": str(claude),
                                 "credential_env": "ANTHROPIC_API_KEY", "config_dir_env": "CLAUDE_CONFIG_DIR",
                                 "models": ["claude"]}},
        "accounts": {name: {"provider": "claude", "credential_env": var, "base_url": url,
                            "config_dir": str(tmp / f"cfg-{name}")} for name, (var, url) in accounts.items()}}))
    return file


def _run(tmp: Path, claude: Path, url: str, monkeypatch: pytest.MonkeyPatch, timeout_ms: int = 90_000):  # type: ignore[no-untyped-def]
    # Quiet the CLI's own side traffic (telemetry, update checks): passed through by the env allowlist.
    monkeypatch.setenv("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
    monkeypatch.setenv("DISABLE_AUTOUPDATER", "1")
    work = tmp / "work"
    work.mkdir(exist_ok=True)
    account = AccountBinding(name="real-a", provider="claude", credential_env="AWP_REAL_CLAUDE_KEY",
                             config_dir=str(tmp / "claude-config"), base_url=url)
    request = ProviderRequest(prompt_text="Say hello.", cwd=work, timeout_ms=timeout_ms, model="claude-haiku-4-5",
                              env={"PATH": os.environ["PATH"], "HOME": str(tmp), "AWP_REAL_CLAUDE_KEY": KEY},
                              account=account)
    adapter = ClaudeCodeAdapter(ProviderSpec(kind="claude_code", command=str(claude),
                                             credential_env="ANTHROPIC_API_KEY", config_dir_env="CLAUDE_CONFIG_DIR"))
    s = sink(tmp, (KEY,))
    started = time.monotonic()
    outcome = adapter.run(request, s)
    return outcome, s, time.monotonic() - started


def test_real_claude_success_through_the_local_fake_api(tmp_path: Path, claude: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    with fake_api("success") as server:
        outcome, s, _ = _run(tmp_path, claude, server.url, monkeypatch)
    assert outcome.ok, (outcome.failure, s.events()[-5:])
    assert outcome.session_id
    assert any(e["type"] == "message_received" and REPLY in e["text"] for e in s.events())
    assert outcome.usage.output_tokens > 0
    assert any(key == KEY for _, key, _ in server.requests)  # its own account's credential reached the API
    assert KEY not in (tmp_path / "events.jsonl").read_text()


@pytest.mark.parametrize(("scenario", "failure_class", "delay"), [
    ("429", "provider_rate_limit", 7000), ("401", "provider_auth_claim", None), ("529", "provider_capacity", None)])
def test_real_claude_api_errors_are_classified_from_api_retry_within_seconds(
        tmp_path: Path, claude: Path, monkeypatch: pytest.MonkeyPatch, scenario: str, failure_class: str,
        delay: int | None) -> None:
    with fake_api(scenario) as server:
        outcome, s, seconds = _run(tmp_path, claude, server.url, monkeypatch)
    failure = outcome.failure
    assert failure is not None and failure.failure_class == failure_class, (failure, types(s))
    assert failure.provider_code == f"api_retry_{scenario}"
    if delay is not None:
        assert failure.suggested_delay_ms == delay
    assert seconds < 30  # ten retries at 7 s would take minutes
    [ended] = [e for e in s.events() if e["type"] == "run_failed"]
    assert ended["ended"] == "stopped" and not group_alive(ended["pgid"])


@pytest.mark.slow
def test_real_claude_rate_limited_account_falls_back_to_the_second_via_awp_run(
        tmp_path: Path, claude: Path, monkeypatch: pytest.MonkeyPatch,
        make_git_repo) -> None:  # type: ignore[no-untyped-def]
    import json

    import yaml
    from e2e_support import awp, stored_records


    monkeypatch.setenv("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
    monkeypatch.setenv("AWP_REAL_A_KEY", KEY + "-a")
    monkeypatch.setenv("AWP_REAL_B_KEY", KEY + "-b")
    packet = tmp_path / "pkt"
    make_git_repo(packet / "workspace")
    (packet / "packet.yaml").write_text(yaml.safe_dump({
        "name": "realfb", "provider": "claude", "model": "claude-haiku-4-5", "timeout": "3m",
        "accounts": ["a", "b"], "repos": {"work": {"path": "./workspace", "default": True}}}))
    (packet / "prompts").mkdir()
    (packet / "prompts" / "01_hello.prompt.md").write_text("---\nid: '01'\nname: Hello\n---\n# Hello\n\nSay hello.\n")
    with fake_api("429") as limited, fake_api("success") as fine:
        providers = _providers_file(tmp_path, claude, {"a": ("AWP_REAL_A_KEY", limited.url),
                                                       "b": ("AWP_REAL_B_KEY", fine.url)})
        started = time.monotonic()
        result = awp("run", packet, "--providers", providers, "--json")
        seconds = time.monotonic() - started
    assert result.exit_code == 0, result.output
    assert seconds < 90
    [outcome] = json.loads(result.stdout)["prompts"]
    records = stored_records(packet, json.loads(result.stdout)["packet_run"])
    assert [(r["target"]["account"], r["identity"]["mode"], r["result"]) for r in records] == [
        ("a", "run", "provider_failed"), ("b", "fallback", "completed")]
    assert records[0]["failure"]["failure_class"] == "provider_rate_limit"
    assert "falling back" in records[1]["target"]["reason"]
    assert {key for _, key, _ in limited.requests} == {KEY + "-a"}  # each account's own credential only
    assert {key for _, key, _ in fine.requests} == {KEY + "-b"}


def test_real_claude_steers_its_iterations_with_awp_agent_control_through_its_bash_tool(
        tmp_path: Path, claude: Path, monkeypatch: pytest.MonkeyPatch,
        make_git_repo) -> None:  # type: ignore[no-untyped-def]
    """The real CLI's own Bash tool runs `awp agent-control repeat`, then `finish`: the control channel and an
    `awp` on its PATH reached it (before, they were stripped from every CLI agent's environment)."""
    import json
    import shutil

    import yaml
    from e2e_support import awp, stored_records

    monkeypatch.setenv("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
    monkeypatch.setenv("DISABLE_AUTOUPDATER", "1")
    monkeypatch.setenv("AWP_REAL_STEER_KEY", KEY)
    # No `awp` on the operator's PATH: the agent finds it only through the Attempt's shim.
    monkeypatch.setenv("PATH", os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep)
                                               if not (Path(p) / "awp").exists()))
    assert shutil.which("awp") is None
    packet = tmp_path / "pkt"
    make_git_repo(packet / "workspace")
    (packet / "packet.yaml").write_text(yaml.safe_dump({
        "name": "realsteer", "provider": "claude", "model": "claude-haiku-4-5", "timeout": "3m",
        "accounts": ["a"], "allowed_tools": ["Bash"],
        "agent_control": {"enabled": True, "completion_verify": {"files_exist": ["final.txt"]},
                          "max_iterations": 4},
        "repos": {"work": {"path": "./workspace", "default": True}}}))
    (packet / "prompts").mkdir()
    (packet / "prompts" / "01_steer.prompt.md").write_text(
        "---\nid: '01'\nname: Steer\nverify:\n  files_exist: [step.txt]\n---\n# Steer\n\nDo one pass.\n")
    with fake_api("agent_control") as server:
        providers = _providers_file(tmp_path, claude, {"a": ("AWP_REAL_STEER_KEY", server.url)})
        result = awp("run", packet, "--providers", providers, "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    records = stored_records(packet, report["packet_run"])
    events = "".join(Path(r["events_file"]).read_text() for r in records)
    assert [(r["identity"]["mode"], r["control"]["iteration"], r["control"]["outcome"], r["control"]["source"])
            for r in records] == [("iterate", 1, "repeat", "request"), ("iterate", 2, "finish", "request")], events
    assert records[0]["control"]["progress"] == "first pass done"
    # The finish gate: the finish stood because completion_verify passed.
    assert records[1]["control"]["reason"] == "all done" and (packet / "workspace" / "final.txt").exists()
    [outcome] = report["prompts"]
    assert outcome["state"] == "completed"
    assert KEY not in events
