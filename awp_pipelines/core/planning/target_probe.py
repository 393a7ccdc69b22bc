"""A `probe: true` target, checked just before it is chosen: is it available now? No Dagster here.

The answer is `awp doctor`'s checks of the target's provider and account (the CLI is found and answers
`--version`, the credential variable is set, the config dir is writable), for `openai_http` a GET of
the endpoint's models list with the credential, and whether the target's model is in its provider's models
list (model_lists.py: an HTTP endpoint's, OpenCode Zen's or OpenRouter's; cached for minutes). Each is
bounded by `timeout_s`. The detail goes into the Attempt's reason; a credential's value never does.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from awp_pipelines.core.packet.providers_config import Catalog
from awp_pipelines.core.planning.model_lists import MODEL_LISTS, ModelListCache, Offered, listing_for
from awp_pipelines.core.planning.provider_checks import Need, diagnose

PROBE_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class ProbeAnswer:
    ok: bool
    detail: str


def probe(catalog: Catalog, provider: str, account: str | None, timeout_s: float = PROBE_TIMEOUT_S,
          model: str | None = None, lists: ModelListCache = MODEL_LISTS) -> ProbeAnswer:
    # online: an HTTP provider's endpoint is asked for its models list, not only found configured
    checks = diagnose(catalog, [Need(provider, (account,) if account else ())], timeout_s, online=True)
    failed = [c.detail for c in checks if c.status != "ok"]
    details = [c.detail for c in checks]
    offered = _offered(catalog, provider, account, model, timeout_s, lists) if not failed else None
    if offered is not None:
        (details if offered.ok else failed).append(offered.detail)
    if failed:
        return ProbeAnswer(False, "; ".join(failed))
    return ProbeAnswer(True, "; ".join(details) or "nothing to check")


def _offered(catalog: Catalog, provider: str, account: str | None, model: str | None, timeout_s: float,
             lists: ModelListCache) -> Offered | None:
    """Whether the provider's models list offers `model` (None: no list known for this kind)."""
    spec = catalog.providers.get(provider)
    binding = catalog.binding(account)
    listing = listing_for(spec.kind, model, (binding.base_url if binding else None) or spec.base_url) if spec else None
    if spec is None or listing is None:
        return None
    # Only an HTTP provider's own endpoint gets its key; OpenCode's lists are public.
    variable = (binding.credential_env if binding else None) or spec.credential_env
    key = os.environ.get(variable) if variable and spec.kind == "openai_http" else None
    return lists.offered(listing, key, timeout_s)
