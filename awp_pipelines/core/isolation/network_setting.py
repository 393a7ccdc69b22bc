"""The `network:` key as written in providers.yaml and packets: a word or a list, kept as a list.

A settings file reads `network: provider` or `network: [provider, pypi.org]`; the models keep both as a list
(one type, which Dagster's run config can carry: it has no union of a word and a list), checked as the
egress's NetworkPolicy would check it. `policy()` turns it back into the policy.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator

from awp_pipelines.core.isolation.network_policy import Network, NetworkPolicy

_MODES = ("provider", "open", "none")


def as_network(values: list[str]) -> Network:
    """`[provider]`, `[open]`, `[none]` → the word; any other list stays a list of host rules."""
    return values[0] if len(values) == 1 and values[0] in _MODES else list(values)  # type: ignore[return-value]


def _listed(value: Any) -> Any:
    return [value] if isinstance(value, str) else value


def _checked(values: list[str]) -> list[str]:
    NetworkPolicy(network=as_network(values))  # a bad host is an error where it is written
    return values


NetworkSetting = Annotated[list[str], BeforeValidator(_listed), AfterValidator(_checked)]


def policy(values: list[str] | None) -> NetworkPolicy:
    """The policy of a setting; unset: `provider`."""
    return NetworkPolicy(network=as_network(values) if values else "provider")
