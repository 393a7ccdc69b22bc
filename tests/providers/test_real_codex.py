"""The real Codex CLI (npm @openai/codex, pinned in install_real_clis.sh) against a local fake Responses API,
reached through the `model_providers` entry the adapter adds for a configured base_url (Codex ignores
OPENAI_BASE_URL). Success, 429, 401 and 500 each classified; errors acted on at Codex's first
"Reconnecting..." event instead of after its five reconnects."""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path

import pytest
from fake_apis import REPLY, fake_api
from provider_helpers import real_cli, sink, types

from awp_pipelines.core.packet.providers_config import AccountBinding, ProviderSpec
from awp_pipelines.core.providers.base import ProviderRequest
from awp_pipelines.core.providers.codex import CodexAdapter
from awp_pipelines.core.providers.process import group_alive

KEY = "sk-proj-real-codex-test-key-0123456789abcdef"


@pytest.fixture(scope="module")
def codex() -> Path:
    return real_cli("codex")


def _request(tmp: Path, url: str) -> ProviderRequest:
    work = tmp / "work"
    work.mkdir(exist_ok=True)
    account = AccountBinding(name="real-codex", provider="codex", credential_env="AWP_REAL_CODEX_KEY",
                             config_dir=str(tmp / "codex-home"), base_url=url + "/v1")
    return ProviderRequest(prompt_text="Say hello.", cwd=work, timeout_ms=90_000, model="gpt-5", effort="low",
                           env={"PATH": os.environ["PATH"], "HOME": str(tmp), "AWP_REAL_CODEX_KEY": KEY},
                           account=account)


def _adapter(codex: Path) -> CodexAdapter:
    return CodexAdapter(ProviderSpec(kind="codex", command=str(codex), credential_env="OPENAI_API_KEY",
                                     config_dir_env="CODEX_HOME"))


def test_real_codex_success_and_native_resume_through_the_local_responses_api(tmp_path: Path, codex: Path) -> None:
    s = sink(tmp_path, (KEY,))
    with fake_api("success") as server:
        outcome = _adapter(codex).run(_request(tmp_path, server.url), s)
        assert outcome.ok, (outcome.failure, s.events()[-5:])
        assert outcome.session_id
        resumed = replace(_request(tmp_path, server.url), session_id=outcome.session_id, prompt_text="Continue",
                          mode="resume")
        again = _adapter(codex).resume(resumed, s)
    assert again.ok and again.session_id == outcome.session_id
    assert any(e["type"] == "message_received" and REPLY in e["text"] for e in s.events())
    # Codex reports the thread's running totals: after the resumed turn, two turns of the fake's usage
    # (60 uncached + 40 cached in, 12 out each), counted once.
    assert (again.usage.input_tokens, again.usage.cached_input_tokens, again.usage.output_tokens) == (120, 80, 24)
    assert {key for path, key, _ in server.requests if path == "/v1/responses"} == {KEY}
    assert KEY not in (tmp_path / "events.jsonl").read_text()


@pytest.mark.parametrize(("scenario", "failure_class"), [
    ("429", "provider_rate_limit"), ("401", "provider_auth_claim")])
def test_real_codex_refusals_are_classified_at_the_first_reconnect(
        tmp_path: Path, codex: Path, scenario: str, failure_class: str) -> None:
    s = sink(tmp_path)
    with fake_api(scenario) as server:
        started = time.monotonic()
        outcome = _adapter(codex).run(_request(tmp_path, server.url), s)
        seconds = time.monotonic() - started
    failure = outcome.failure
    assert failure is not None and failure.failure_class == failure_class, (failure, types(s))
    assert "Reconnecting... 1/5" in failure.message
    [ended] = [e for e in s.events() if e["type"] == "run_failed"]
    assert ended["ended"] == "stopped" and not group_alive(ended["pgid"])
    assert seconds < 60


def test_real_codex_overload_is_provider_capacity_after_one_reconnect(tmp_path: Path, codex: Path) -> None:
    with fake_api("500") as server:
        outcome = _adapter(codex).run(_request(tmp_path, server.url), sink(tmp_path))
    assert outcome.failure is not None and outcome.failure.failure_class == "provider_capacity", outcome.failure
    assert "Reconnecting... 2/5" in outcome.failure.message
