"""The real Claude Code CLI as root (this machine and CI run as root), against the local fake Messages API:
with permission_mode bypass and no IS_SANDBOX, `awp doctor` and `awp run`'s preflight say what to do and
no Attempt starts; the CLI's own refusal (when reached) is one deterministic failure, not retried; with
`env: {IS_SANDBOX: '1'}` on the account, the same packet runs."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import yaml
from fake_apis import fake_api
from provider_helpers import real_cli, sink

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))

from awp_pipelines.core.packet.providers_config import AccountBinding, ProviderSpec
from awp_pipelines.core.providers.base import ProviderRequest
from awp_pipelines.core.providers.claude_code import ClaudeCodeAdapter

KEY = "sk-ant-api03-root-test-key-0123456789abcdef"
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root: what CI and containers run as")


@pytest.fixture(scope="module")
def claude() -> Path:
    return real_cli("claude")


def _packet(tmp: Path, claude: Path, url: str, account_env: dict[str, str], make_git_repo) -> tuple[Path, Path]:  # type: ignore[no-untyped-def]
    packet = tmp / "pkt"
    make_git_repo(packet / "workspace")
    (packet / "packet.yaml").write_text(yaml.safe_dump({
        "name": "rootpkt", "provider": "claude", "model": "claude-haiku-4-5", "timeout": "3m",
        "permission_mode": "bypass", "accounts": ["box"],
        "repos": {"work": {"path": "./workspace", "default": True}}}))
    (packet / "prompts").mkdir()
    (packet / "prompts" / "01_hello.prompt.md").write_text("---\nid: '01'\nname: Hello\n---\n# Hello\n\nSay hello.\n")
    providers = tmp / "providers.yaml"
    providers.write_text(yaml.safe_dump({
        "providers": {"claude": {"kind": "claude_code", "command": str(claude), "credential_env": "ANTHROPIC_API_KEY",
                                 "config_dir_env": "CLAUDE_CONFIG_DIR", "models": ["claude"],
                                 # As root beside the runner: in AWP's sandbox the agent is never root.
                                 "isolation": "none"}},
        "accounts": {"box": {"provider": "claude", "credential_env": "AWP_ROOT_KEY", "base_url": url,
                             "config_dir": str(tmp / "cfg"), "env": account_env}}}))
    return packet, providers


def test_real_claude_as_root_without_is_sandbox_is_refused_before_any_attempt(
        tmp_path: Path, claude: Path, monkeypatch: pytest.MonkeyPatch, make_git_repo) -> None:  # type: ignore[no-untyped-def]
    from e2e_support import awp

    monkeypatch.delenv("IS_SANDBOX", raising=False)
    monkeypatch.setenv("AWP_ROOT_KEY", KEY)
    with fake_api("success") as server:
        packet, providers = _packet(tmp_path, claude, server.url, {}, make_git_repo)
        doctor = awp("doctor", packet, "--providers", providers, "--json")
        run = awp("run", packet, "--providers", providers)
    assert doctor.exit_code == 1, doctor.output
    [root] = [c for c in json.loads(doctor.stdout)["checks"] if c["what"] == "root"]
    assert root["status"] == "blocking" and root["subject"] == "claude:box"
    assert "IS_SANDBOX: '1'" in root["fix"] and "account box" in root["fix"]
    assert run.exit_code == 2, run.output
    assert "IS_SANDBOX" in run.output and "permission_mode" in run.output
    assert server.requests == []  # no Attempt started, so nothing reached the API


def test_real_claude_own_root_refusal_is_one_deterministic_failure(
        tmp_path: Path, claude: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the preflight (as when a check is skipped), the CLI's own refusal is classified as deterministic."""
    class NoPreflight(ClaudeCodeAdapter):
        def refusal(self, request, env, executable):  # type: ignore[no-untyped-def]
            return None

    monkeypatch.delenv("IS_SANDBOX", raising=False)
    account = AccountBinding(name="box", provider="claude", credential_env="AWP_ROOT_KEY",
                             config_dir=str(tmp_path / "cfg"), base_url="http://127.0.0.1:9")
    request = ProviderRequest(prompt_text="Say hello.", cwd=tmp_path, timeout_ms=60_000, model="claude-haiku-4-5",
                              env={"PATH": os.environ["PATH"], "HOME": str(tmp_path), "AWP_ROOT_KEY": KEY},
                              account=account, permission_mode="bypass")
    adapter = NoPreflight(ProviderSpec(kind="claude_code", command=str(claude), credential_env="ANTHROPIC_API_KEY",
                                       config_dir_env="CLAUDE_CONFIG_DIR"))
    failure = adapter.run(request, sink(tmp_path, (KEY,))).failure
    assert failure is not None and "cannot be used with root" in failure.message, failure
    assert failure.failure_class == "provider_config_claim"
    assert not failure.retryable and failure.local_deterministic


def test_real_claude_as_root_with_is_sandbox_on_the_account_runs(
        tmp_path: Path, claude: Path, monkeypatch: pytest.MonkeyPatch, make_git_repo) -> None:  # type: ignore[no-untyped-def]
    from e2e_support import awp

    monkeypatch.delenv("IS_SANDBOX", raising=False)
    monkeypatch.setenv("AWP_ROOT_KEY", KEY)
    monkeypatch.setenv("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
    with fake_api("success") as server:
        packet, providers = _packet(tmp_path, claude, server.url, {"IS_SANDBOX": "1"}, make_git_repo)
        doctor = awp("doctor", packet, "--providers", providers, "--json")
        run = awp("run", packet, "--providers", providers, "--json")
    assert not [c for c in json.loads(doctor.stdout)["checks"] if c["what"] == "root"]
    assert run.exit_code == 0, run.output
    [outcome] = json.loads(run.stdout)["prompts"]
    assert outcome["result"] == "completed"
    assert any(key == KEY for _, key, _ in server.requests)


def test_real_claude_as_a_non_root_user_accepts_bypass_without_is_sandbox(tmp_path: Path, claude: Path) -> None:
    """What root_refusal assumes of a non-root user, on the real CLI run as `nobody` (runuser)."""
    import shutil
    import tempfile

    runuser = shutil.which("runuser") or "/usr/sbin/runuser"
    binary = claude.parent.parent / "@anthropic-ai" / "claude-code-linux-x64" / "claude"
    if not Path(runuser).exists() or not binary.exists():
        pytest.skip("needs runuser and the linux-x64 Claude Code binary")
    shared = Path(tempfile.mkdtemp(prefix="awp-nobody-"))  # pytest's tmp is 0700: nobody could not enter it
    try:
        shared.chmod(0o755)
        try:
            os.link(binary, shared / "claude")  # /root is 0700 too; a hard link costs nothing
        except OSError:
            pytest.skip("cannot link the Claude Code binary next to a folder nobody can reach")
        for name in ("work", "cfg"):
            (shared / name).mkdir(mode=0o777)
            (shared / name).chmod(0o777)
        wrapper = shared / "claude-as-nobody"
        wrapper.write_text(f'#!/bin/sh\nexec {runuser} -u nobody -- {shared / "claude"} "$@"\n')
        wrapper.chmod(0o755)

        class AsNobody(ClaudeCodeAdapter):  # AWP runs as root here; the agent does not
            def refusal(self, request, env, executable):  # type: ignore[no-untyped-def]
                return None

        with fake_api("success") as server:
            account = AccountBinding(name="box", provider="claude", credential_env="AWP_ROOT_KEY",
                                     config_dir=str(shared / "cfg"), base_url=server.url)
            request = ProviderRequest(prompt_text="Say hello.", cwd=shared / "work", timeout_ms=90_000,
                                      model="claude-haiku-4-5", account=account, permission_mode="bypass",
                                      env={"PATH": os.environ["PATH"], "HOME": str(shared), "AWP_ROOT_KEY": KEY})
            adapter = AsNobody(ProviderSpec(kind="claude_code", command=str(wrapper),
                                            credential_env="ANTHROPIC_API_KEY", config_dir_env="CLAUDE_CONFIG_DIR"))
            s = sink(tmp_path, (KEY,))
            outcome = adapter.run(request, s)
        assert outcome.ok, (outcome.failure, s.events()[-4:])
        [init] = [e for e in s.events() if e["type"] == "session_started"][:1]
        assert init["permission_mode"] == "bypassPermissions"
    finally:
        shutil.rmtree(shared, ignore_errors=True)
