"""The agent process's environment: its own account's credential and config dir, and nothing else secret."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from provider_helpers import KIND_SPECS, sink

from awp_pipelines.core.packet.providers_config import AccountSpec, Catalog
from awp_pipelines.core.providers.base import ProviderRequest
from awp_pipelines.core.providers.registry import adapter_for

OWN = "sk-own-account-credential-AAAA1111"
OTHER = "sk-other-account-credential-BBBB2222"
CANARIES = {"GIT_ASKPASS": "/usr/bin/canary-askpass", "SSH_AUTH_SOCK": "/tmp/canary-agent.sock",
            "DAGSTER_HOME": "/tmp/canary-dagster", "DAGSTER_PG_PASSWORD": "canary-dagster-pg",
            "PGPASSWORD": "canary-pg-password", "PGHOST": "canary-pg-host",
            "GIT_CONFIG_GLOBAL": "/tmp/canary-gitconfig", "GITHUB_TOKEN": "ghp_canarycanarycanarycanary00"}


def _catalog(tmp: Path, kind: str) -> Catalog:
    spec = KIND_SPECS[kind]
    return Catalog(providers={"p": spec}, accounts={
        "own": AccountSpec(provider="p", credential_env="AWP_ENVTEST_OWN_KEY", config_dir=str(tmp / "cfg" / "own")),
        "other": AccountSpec(provider="p", credential_env="AWP_ENVTEST_OTHER_KEY",
                             config_dir=str(tmp / "cfg" / "other"))})


@pytest.mark.parametrize("kind", sorted(KIND_SPECS))
def test_agent_sees_its_own_credential_and_config_dir_and_no_other_secret(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    for name, value in CANARIES.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWP_ENVTEST_OWN_KEY", OWN)
    monkeypatch.setenv("AWP_ENVTEST_OTHER_KEY", OTHER)
    spec = KIND_SPECS[kind]
    monkeypatch.setenv(spec.credential_env or "X", OTHER)  # the user's own login must not leak in either
    catalog = _catalog(tmp_path, kind)
    dump = tmp_path / "env.json"
    work = tmp_path / "work"
    work.mkdir()
    # Handed over the way execute_attempt hands it: the account's secrets; the one builder adds the rest.
    request = ProviderRequest(prompt_text=f"awp-fake-env-dump: {dump}", cwd=work, timeout_ms=20_000,
                              env=catalog.account_secrets("own"), account=catalog.binding("own"))
    outcome = adapter_for(spec, "p").run(request, sink(tmp_path, (OWN,)))
    assert outcome.ok, outcome.failure
    env = json.loads(dump.read_text())
    assert env[spec.credential_env or ""] == OWN
    if spec.config_dir_env:
        assert env[spec.config_dir_env] == str(tmp_path / "cfg" / "own")
    values = set(env.values())
    assert OTHER not in values
    assert not values & set(CANARIES.values())
    assert not [k for k in env if k.startswith(("DAGSTER_", "PG", "GIT_", "SSH_", "AWP_"))]
    assert env.get("PATH")


def test_endpoint_comes_from_the_account_else_a_user_set_variable_passes_through(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from awp_pipelines.core.providers.environment import agent_env

    spec = KIND_SPECS["claude_code"]
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "https://user-gateway.test")
    catalog = _catalog(tmp_path, "claude_code")
    plain = agent_env("claude_code", spec, catalog.binding("own"), {})
    assert plain["ANTHROPIC_BASE_URL"] == "https://user-gateway.test"
    catalog.accounts["own"] = catalog.accounts["own"].model_copy(update={"base_url": "http://127.0.0.1:9999"})
    routed = agent_env("claude_code", spec, catalog.binding("own"), {})
    assert routed["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9999"


CONTROL = {"AWP_AGENT_CONTROL_FILE": "/tmp/awp-envtest/request.json", "AWP_AGENT_CONTROL_TOKEN": "tok-envtest-123",
           "PROMPT_RUNNER_AGENT_CONTROL_FILE": "/tmp/awp-envtest/request.json", "AWP_PROMPT_ITERATION": "2",
           "AWP_AGENT_ATTEMPT": "pr-x.01.a1"}


@pytest.mark.parametrize("kind", sorted(KIND_SPECS))
def test_every_cli_agent_gets_the_control_channel_an_awp_on_its_path_and_a_scoped_home(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    """The control variables are in the agent's environment by design (issue 19's "agent-control variables
    are dropped": only the simulated provider saw them); its HOME is the account's own folder."""
    from awp_pipelines.core.providers.environment import awp_shim, scoped_home

    operator_home = tmp_path / "operator"
    (operator_home / ".ssh").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(operator_home))
    monkeypatch.setenv("AWP_AGENT_CONTROL_FILE", "/tmp/not-this-one")  # AWP's own, never inherited
    monkeypatch.setenv("AWP_ENVTEST_OWN_KEY", OWN)
    spec = KIND_SPECS[kind]
    catalog = _catalog(tmp_path, kind)
    dump, work = tmp_path / "env.json", tmp_path / "work"
    work.mkdir()
    home = scoped_home(tmp_path / "state" / "homes", "own", "p")
    tools = awp_shim(tmp_path / "state" / "bin")
    request = ProviderRequest(prompt_text=f"awp-fake-env-dump: {dump}", cwd=work, timeout_ms=20_000,
                              env={**catalog.account_secrets("own"), **CONTROL, "AWP_DATABASE": "nope"},
                              account=catalog.binding("own"), home=home, tools=tools)
    assert adapter_for(spec, "p").run(request, sink(tmp_path, (OWN,))).ok
    env = json.loads(dump.read_text())
    assert {k: env.get(k) for k in CONTROL} == CONTROL
    assert "AWP_DATABASE" not in env
    assert env["HOME"] == str(tmp_path / "state" / "homes" / "own") and Path(env["HOME"]).is_dir()
    assert str(operator_home) not in "".join(env.values())
    # Ahead of the operator's PATH (an interpreter shim such as pyenv's may put its own folder first).
    parts, first = env["PATH"].split(":"), os.environ["PATH"].split(":")[0]
    assert parts.index(str(tools)) < parts.index(first) and (tools / "awp").stat().st_mode & 0o111


def test_the_awp_shim_runs_agent_control(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess

    from awp_pipelines.core.providers.environment import awp_shim

    tools = awp_shim(tmp_path / "bin")
    done = subprocess.run([str(tools / "awp"), "agent-control", "repeat"], env={"PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=120)
    # Reached the command: it answers as it does outside a session.
    assert done.returncode != 0 and "AWP_AGENT_CONTROL_FILE is not set" in done.stdout + done.stderr


def test_without_an_account_the_cli_login_dir_is_handed_over_not_the_home_around_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from awp_pipelines.core.providers.environment import agent_env

    operator_home = tmp_path / "operator"
    (operator_home / ".claude").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(operator_home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    (operator_home / ".gemini").mkdir()
    for name in ("CLAUDE_CONFIG_DIR", "GEMINI_CLI_HOME", "XDG_DATA_HOME", "CODEX_HOME"):
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "homes" / "login"
    env = agent_env("claude_code", KIND_SPECS["claude_code"], None, {}, home=home)
    assert env["HOME"] == str(home)
    assert env["CLAUDE_CONFIG_DIR"] == str(operator_home / ".claude")
    assert agent_env("gemini", KIND_SPECS["gemini"], None, {}, home=home)["GEMINI_CLI_HOME"] == str(operator_home)
    assert "CODEX_HOME" not in agent_env("codex", KIND_SPECS["codex"], None, {}, home=home)  # no login there
    assert "XDG_DATA_HOME" not in agent_env("opencode", KIND_SPECS["opencode"], None, {}, home=home)
