"""The probe of a free target asks the provider whether the model is offered: an HTTP endpoint's models list,
OpenCode Zen's or OpenRouter's for OpenCode models; each list is kept for minutes, a failed answer not at all."""

from __future__ import annotations

import pytest
import responses
from provider_helpers import FAKES

from awp_pipelines.core.packet.providers_config import AccountSpec, Catalog, ProviderSpec
from awp_pipelines.core.planning.model_lists import OPENCODE_LISTS, Listing, ModelListCache, listing_for
from awp_pipelines.core.planning.target_probe import probe

BASE = "http://probe.test/v1"
KEY = "sk-or-probe-secret-0123456789abcdef"


def _http() -> Catalog:
    return Catalog(providers={"router": ProviderSpec(kind="openai_http", base_url=BASE)},
                   accounts={"router-a": AccountSpec(provider="router", credential_env="AWP_PROBE_KEY")})


def _opencode() -> Catalog:
    return Catalog(providers={"zen": ProviderSpec(kind="opencode", command=str(FAKES / "opencode"))})


@responses.activate
def test_an_http_probe_asks_whether_the_model_is_in_the_endpoints_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWP_PROBE_KEY", KEY)
    responses.get(f"{BASE}/models", json={"data": [{"id": "free-a"}, {"id": "free-b"}]})
    lists = ModelListCache()
    assert probe(_http(), "router", "router-a", model="free-b", lists=lists).ok
    gone = probe(_http(), "router", "router-a", model="free-c", lists=lists)
    assert not gone.ok and "free-c is not in http://probe.test/v1/models (2 models)" in gone.detail
    assert KEY not in gone.detail
    assert all(call.request.headers["Authorization"] == f"Bearer {KEY}" for call in responses.calls)


@pytest.mark.parametrize(("model", "url", "model_id"), [
    ("opencode/deepseek-v4-flash-free", OPENCODE_LISTS["opencode"], "deepseek-v4-flash-free"),
    ("openrouter/cohere/north-mini-code:free", OPENCODE_LISTS["openrouter"], "cohere/north-mini-code:free"),
])
@responses.activate
def test_an_opencode_probe_asks_zens_or_openrouters_list_without_a_key(
        model: str, url: str, model_id: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENCODE_API_KEY", KEY)
    responses.get(url, json={"data": [{"id": model_id}, {"id": "other"}]})
    assert probe(_opencode(), "zen", None, model=model, lists=ModelListCache()).ok
    assert "Authorization" not in responses.calls[-1].request.headers
    responses.replace(responses.GET, url, json={"data": [{"id": "other"}]})
    answer = probe(_opencode(), "zen", None, model=model, lists=ModelListCache())
    assert not answer.ok and f"{model_id} is not in {url}" in answer.detail


def test_a_configured_base_url_is_the_list_an_opencode_model_is_looked_up_in() -> None:
    assert listing_for("opencode", "opencode/x-free", "http://gw.test/v1/") == Listing("http://gw.test/v1/models",
                                                                                        "x-free")
    assert listing_for("opencode", "local-model", None) is None
    assert listing_for("claude_code", "haiku", None) is None


@responses.activate
def test_a_list_is_kept_for_minutes_and_a_failed_answer_is_not_kept() -> None:
    now = [0.0]
    lists = ModelListCache(ttl_s=300, clock=lambda: now[0])
    listing = Listing(f"{BASE}/models", "m")
    responses.get(f"{BASE}/models", status=503)
    assert not lists.offered(listing, None, 5).ok
    responses.replace(responses.GET, f"{BASE}/models", json={"data": [{"id": "m"}]})
    assert lists.offered(listing, None, 5).ok  # the outage was not remembered
    now[0] = 299
    assert lists.offered(listing, None, 5).ok
    assert len(responses.calls) == 2  # the second success came from the cache
    responses.replace(responses.GET, f"{BASE}/models", json={"data": []})
    now[0] = 301
    assert not lists.offered(listing, None, 5).ok and len(responses.calls) == 3
