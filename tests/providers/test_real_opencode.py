"""The real OpenCode CLI (npm opencode-ai, pinned in install_real_clis.sh) against the local fake Messages
API: the adapter points the model's provider (`anthropic/...`) at the account's base_url through
OPENCODE_CONFIG_CONTENT. Success and 401 are classified from its events; on a 429 OpenCode's stdout stays
silent while it retries for ever (#8203): the adapter acts on the "stream error" in its stderr log within
seconds; were that log silent too, the idle deadline would end it as `transport_timeout`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fake_apis import REPLY, fake_api
from provider_helpers import real_cli, sink

from awp_pipelines.core.packet.providers_config import AccountBinding, ProviderSpec
from awp_pipelines.core.providers.base import ProviderRequest
from awp_pipelines.core.providers.opencode import OpenCodeAdapter
from awp_pipelines.core.providers.process import group_alive

KEY = "sk-ant-api03-real-opencode-test-0123456789abcdef"


@pytest.fixture(scope="module")
def opencode() -> Path:
    return real_cli("opencode")


def _run(tmp: Path, opencode: Path, url: str, monkeypatch: pytest.MonkeyPatch, idle_ms: int):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("OPENCODE_DISABLE_MODELS_FETCH", "1")  # offline: no models.dev
    monkeypatch.setenv("OPENCODE_DISABLE_AUTOUPDATE", "1")
    work = tmp / "work"
    work.mkdir(exist_ok=True)
    account = AccountBinding(name="real-oc", provider="opencode", credential_env="AWP_REAL_OC_KEY",
                             base_url=url + "/v1")
    request = ProviderRequest(prompt_text="Say hello.", cwd=work, timeout_ms=120_000, idle_timeout_ms=idle_ms,
                              model="anthropic/claude-haiku-4-5", account=account,
                              env={"PATH": os.environ["PATH"], "HOME": str(tmp), "AWP_REAL_OC_KEY": KEY})
    adapter = OpenCodeAdapter(ProviderSpec(kind="opencode", command=str(opencode), credential_env="ANTHROPIC_API_KEY"))
    s = sink(tmp, (KEY,))
    return adapter.run(request, s), s


def test_real_opencode_success_with_session_usage_and_reported_cost(
        tmp_path: Path, opencode: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with fake_api("success") as server:
        outcome, s = _run(tmp_path, opencode, server.url, monkeypatch, idle_ms=90_000)
    assert outcome.ok, (outcome.failure, s.events()[-4:])
    assert (outcome.session_id or "").startswith("ses_")
    assert any(e["type"] == "message_received" and REPLY in e["text"] for e in s.events())
    assert outcome.usage.output_tokens == 9 and outcome.usage.cost_reported
    assert {key for _, key, _ in server.requests} == {KEY}


def test_real_opencode_401_is_an_auth_claim(tmp_path: Path, opencode: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with fake_api("401") as server:
        outcome, _ = _run(tmp_path, opencode, server.url, monkeypatch, idle_ms=90_000)
    assert outcome.failure is not None and outcome.failure.failure_class == "provider_auth_claim", outcome.failure


def test_real_opencode_429_is_acted_on_from_its_error_log_within_seconds(
        tmp_path: Path, opencode: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with fake_api("429") as server:
        outcome, s = _run(tmp_path, opencode, server.url, monkeypatch, idle_ms=90_000)
        asked = len(server.requests)
    assert asked >= 1
    failure = outcome.failure
    assert failure is not None and failure.failure_class == "provider_rate_limit", failure
    assert failure.provider_code == "stream_error"
    [ended] = [e for e in s.events() if e["type"] == "run_failed"]
    assert ended["ended"] == "stopped" and ended["elapsed_ms"] < 60_000 and not group_alive(ended["pgid"])
