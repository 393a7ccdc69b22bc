"""The agent process's environment: its own account's credential and config dir, and nothing else secret."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from provider_helpers import KIND_SPECS, sink

from awp_pipelines.attempts import agent_environment
from awp_pipelines.catalog import AccountSpec, Catalog
from awp_pipelines.providers.base import ProviderRequest
from awp_pipelines.providers.registry import adapter_for

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
    # Built the way execute_attempt builds it: the account's secrets, then the adapter's allowlist.
    request = ProviderRequest(prompt_text=f"awp-fake-env-dump: {dump}", cwd=work, timeout_ms=20_000,
                              env=agent_environment(catalog.account_secrets("own")), account=catalog.binding("own"))
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
    from awp_pipelines.providers.environment import agent_env

    spec = KIND_SPECS["claude_code"]
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "https://user-gateway.test")
    catalog = _catalog(tmp_path, "claude_code")
    plain = agent_env("claude_code", spec, catalog.binding("own"), {})
    assert plain["ANTHROPIC_BASE_URL"] == "https://user-gateway.test"
    catalog.accounts["own"] = catalog.accounts["own"].model_copy(update={"base_url": "http://127.0.0.1:9999"})
    routed = agent_env("claude_code", spec, catalog.binding("own"), {})
    assert routed["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9999"
