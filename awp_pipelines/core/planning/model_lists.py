"""Is a model offered? The provider's own models list (OpenAI-compatible `GET …/models`), cached for minutes.

A free model comes and goes: the probe of a `probe: true` target asks the list before an Attempt starts on
it. `openai_http` providers are asked at their base_url; OpenCode's models are `<provider>/<id>`, where
`opencode/…` is OpenCode Zen's list and `openrouter/…` OpenRouter's (or the configured base_url). The key, if
any, goes in the header only, never into an answer.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import requests

LIST_TTL_S = 300.0  # minutes, not hours: a free model withdrawn today is noticed today
# OpenCode's model prefixes whose public models list we know
OPENCODE_LISTS: dict[str, str] = {"opencode": "https://opencode.ai/zen/v1/models",
                                  "openrouter": "https://openrouter.ai/api/v1/models"}


@dataclass(frozen=True)
class Listing:
    """Where a model is listed, and the id it has there."""

    url: str
    model_id: str


def listing_for(kind: str, model: str | None, base_url: str | None) -> Listing | None:
    """The list to ask for `model` on a provider of `kind` (None: no list known)."""
    if not model:
        return None
    if kind == "openai_http" and base_url:
        return Listing(base_url.rstrip("/") + "/models", model)
    if kind == "opencode" and "/" in model:
        prefix, model_id = model.split("/", 1)
        url = base_url.rstrip("/") + "/models" if base_url else OPENCODE_LISTS.get(prefix)
        return Listing(url, model_id) if url else None
    return None


@dataclass(frozen=True)
class Offered:
    ok: bool
    detail: str


class ModelListCache:
    """Model ids per list URL, each kept `ttl_s` seconds; only successful answers are kept."""

    def __init__(self, ttl_s: float = LIST_TTL_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl_s, self.clock = ttl_s, clock
        self._lists: dict[str, tuple[float, frozenset[str]]] = {}

    def ids(self, url: str, key: str | None, timeout_s: float) -> frozenset[str]:
        """Raises requests.RequestException, or ValueError for an answer that is no models list."""
        kept = self._lists.get(url)
        if kept is not None and self.clock() - kept[0] < self.ttl_s:
            return kept[1]
        response = requests.get(url, headers={"Authorization": f"Bearer {key}"} if key else {}, timeout=timeout_s)
        response.raise_for_status()
        data = response.json().get("data")
        if not isinstance(data, list):
            raise ValueError("no `data` list in the answer")
        ids = frozenset(str(m["id"]) for m in data if isinstance(m, dict) and m.get("id"))
        self._lists[url] = (self.clock(), ids)
        return ids

    def offered(self, listing: Listing, key: str | None, timeout_s: float) -> Offered:
        try:
            ids = self.ids(listing.url, key, timeout_s)
        except requests.HTTPError as err:
            status = err.response.status_code if err.response is not None else "?"
            return Offered(False, f"GET {listing.url}: {status}")
        except (requests.RequestException, ValueError) as err:
            return Offered(False, f"GET {listing.url}: {type(err).__name__}")
        if listing.model_id in ids:
            return Offered(True, f"{listing.model_id} is offered ({listing.url})")
        return Offered(False, f"{listing.model_id} is not in {listing.url} ({len(ids)} models)")


MODEL_LISTS = ModelListCache()  # one per process: every probe in it shares the lists for LIST_TTL_S
