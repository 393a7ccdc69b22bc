"""The real Gemini CLI (npm @google/gemini-cli, pinned in install_real_clis.sh) against the local fake API's
streamGenerateContent through GOOGLE_GEMINI_BASE_URL. The adapter selects API-key auth in the account's own
config dir (GEMINI_CLI_HOME). Success and 401 come from its events; a 429 or 5xx shows only as its silent
retries on stderr ("Attempt 1 failed with status 429"), acted on there within seconds."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from fake_apis import REPLY, fake_api
from provider_helpers import real_cli, sink

from awp_pipelines.core.packet.providers_config import AccountBinding, ProviderSpec
from awp_pipelines.core.providers.base import ProviderRequest
from awp_pipelines.core.providers.gemini import GeminiAdapter
from awp_pipelines.core.providers.process import group_alive

KEY = "AIzaSyReal-gemini-test-key-0123456789abc"


@pytest.fixture(scope="module")
def gemini() -> Path:
    return real_cli("gemini")


def _run(tmp: Path, gemini: Path, url: str):  # type: ignore[no-untyped-def]
    work = tmp / "work"
    work.mkdir(exist_ok=True)
    account = AccountBinding(name="real-gemini", provider="gemini", credential_env="AWP_REAL_GEMINI_KEY",
                             config_dir=str(tmp / "gemini-home"), base_url=url)
    request = ProviderRequest(prompt_text="Say hello.", cwd=work, timeout_ms=120_000, idle_timeout_ms=60_000,
                              model="gemini-2.5-flash", account=account,
                              env={"PATH": os.environ["PATH"], "HOME": str(tmp), "AWP_REAL_GEMINI_KEY": KEY})
    adapter = GeminiAdapter(ProviderSpec(kind="gemini", command=str(gemini), credential_env="GEMINI_API_KEY",
                                         config_dir_env="GEMINI_CLI_HOME"))
    s = sink(tmp, (KEY,))
    started = time.monotonic()
    return adapter.run(request, s), s, time.monotonic() - started


def test_real_gemini_success_with_auth_selected_in_the_accounts_own_config_dir(tmp_path: Path, gemini: Path) -> None:
    with fake_api("success") as server:
        outcome, s, _ = _run(tmp_path, gemini, server.url)
    assert outcome.ok, (outcome.failure, s.events()[-4:])
    assert outcome.session_id
    assert any(e["type"] == "message_received" and REPLY in e["text"] for e in s.events())
    assert outcome.usage.output_tokens == 8
    assert {key for _, key, _ in server.requests} == {KEY}
    settings = json.loads((tmp_path / "gemini-home" / ".gemini" / "settings.json").read_text())
    assert settings["security"]["auth"]["selectedType"] == "gemini-api-key"
    assert KEY not in (tmp_path / "events.jsonl").read_text()


def test_real_gemini_401_is_an_auth_claim(tmp_path: Path, gemini: Path) -> None:
    with fake_api("401") as server:
        outcome, _, _ = _run(tmp_path, gemini, server.url)
    assert outcome.failure is not None and outcome.failure.failure_class == "provider_auth_claim", outcome.failure


@pytest.mark.parametrize(("scenario", "failure_class"), [("429", "provider_rate_limit"),
                                                         ("500", "provider_capacity")])
def test_real_gemini_silent_retries_are_acted_on_from_stderr(tmp_path: Path, gemini: Path, scenario: str,
                                                             failure_class: str) -> None:
    with fake_api(scenario) as server:
        outcome, s, seconds = _run(tmp_path, gemini, server.url)
    failure = outcome.failure
    assert failure is not None and failure.failure_class == failure_class, failure
    assert failure.provider_code == f"retry_{scenario}"
    assert seconds < 40  # its own backoff would go on for minutes
    [ended] = [e for e in s.events() if e["type"] == "run_failed"]
    assert ended["ended"] == "stopped" and not group_alive(ended["pgid"])
