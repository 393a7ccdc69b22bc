"""A `probe: true` target, checked just before it is chosen: is it available now? No Dagster here.

The answer is `awp doctor`'s checks of the target's provider and account (the CLI is found and answers
`--version`, the credential variable is set, the config dir is writable), and for `openai_http` a GET of
the endpoint's models list with the credential. Each is bounded by `timeout_s`. The detail goes into the
Attempt's reason; a credential's value never does.
"""

from __future__ import annotations

from dataclasses import dataclass

from awp_pipelines.catalog import Catalog
from awp_pipelines.doctor import Need, diagnose

PROBE_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class ProbeAnswer:
    ok: bool
    detail: str


def probe(catalog: Catalog, provider: str, account: str | None, timeout_s: float = PROBE_TIMEOUT_S) -> ProbeAnswer:
    # online: an HTTP provider's endpoint is asked for its models list, not only found configured
    checks = diagnose(catalog, [Need(provider, (account,) if account else ())], timeout_s, online=True)
    failed = [c for c in checks if c.status != "ok"]
    if failed:
        return ProbeAnswer(False, "; ".join(c.detail for c in failed))
    return ProbeAnswer(True, "; ".join(c.detail for c in checks) or "nothing to check")
