"""The openai_http adapter against `responses`: statuses, Retry-After, malformed bodies, resets."""

from __future__ import annotations

from pathlib import Path

import requests
import responses
from provider_helpers import request, sink, types

from awp_pipelines.core.packet.providers_config import ProviderSpec
from awp_pipelines.core.providers.openai_http import OpenAIHttpAdapter

BASE = "https://gateway.test/api/v1"
URL = BASE + "/chat/completions"
KEY = "sk-or-v1-test-0123456789abcdef"
ADAPTER = OpenAIHttpAdapter(ProviderSpec(kind="openai_http", base_url=BASE, credential_env="OPENROUTER_API_KEY"),
                            name="openrouter")


def _run(tmp: Path):  # type: ignore[no-untyped-def]
    s = sink(tmp, (KEY,))
    return ADAPTER.run(request(tmp, "Say hi", KEY, model="cohere/north-mini-code:free"), s), s


@responses.activate
def test_200_gives_the_message_usage_and_reported_cost(tmp_path: Path) -> None:
    responses.post(URL, json={"id": "gen-123", "model": "cohere/north-mini-code:free", "choices": [
        {"message": {"role": "assistant", "content": "hi there"}}],
        "usage": {"prompt_tokens": 50, "completion_tokens": 7, "prompt_tokens_details": {"cached_tokens": 10},
                  "completion_tokens_details": {"reasoning_tokens": 3}, "cost": 0.00042}})
    outcome, s = _run(tmp_path)
    assert outcome.ok and outcome.session_id == "gen-123"
    assert outcome.usage.input_tokens == 40 and outcome.usage.cached_input_tokens == 10
    assert outcome.usage.output_tokens == 7 and outcome.usage.reasoning_tokens == 3
    assert outcome.usage.cost_usd == 0.00042 and outcome.usage.cost_reported
    sent = responses.calls[0].request
    assert sent.headers["Authorization"] == f"Bearer {KEY}"
    assert "message_received" in types(s)
    assert KEY not in (tmp_path / "events.jsonl").read_text()


@responses.activate
def test_429_with_retry_after_is_a_rate_limit_with_that_delay(tmp_path: Path) -> None:
    responses.post(URL, status=429, headers={"Retry-After": "17"}, json={"error": {"message": "Rate limit exceeded"}})
    outcome, s = _run(tmp_path)
    assert outcome.failure is not None and outcome.failure.failure_class == "provider_rate_limit"
    assert outcome.failure.suggested_delay_ms == 17_000 and outcome.failure.provider_code == "http_429"
    assert "rate_limit_notice" in types(s)


@responses.activate
def test_401_is_an_auth_claim(tmp_path: Path) -> None:
    responses.post(URL, status=401, json={"error": {"message": "No auth credentials found"}})
    outcome, _ = _run(tmp_path)
    assert outcome.failure is not None and outcome.failure.failure_class == "provider_auth_claim"


@responses.activate
def test_503_is_provider_capacity(tmp_path: Path) -> None:
    responses.post(URL, status=503, body="upstream unavailable")
    outcome, _ = _run(tmp_path)
    assert outcome.failure is not None and outcome.failure.failure_class == "provider_capacity"
    assert outcome.failure.retryable


@responses.activate
def test_malformed_json_is_a_protocol_error(tmp_path: Path) -> None:
    responses.post(URL, status=200, body="{not json", content_type="application/json")
    outcome, _ = _run(tmp_path)
    assert outcome.failure is not None and outcome.failure.failure_class == "protocol_error"


@responses.activate
def test_connection_reset_is_a_transport_disconnect(tmp_path: Path) -> None:
    responses.post(URL, body=requests.exceptions.ConnectionError("Connection reset by peer"))
    outcome, _ = _run(tmp_path)
    assert outcome.failure is not None and outcome.failure.failure_class == "transport_disconnect"
    assert outcome.failure.resumeable
