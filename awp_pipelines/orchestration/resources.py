"""Dagster resources: the AWP runtime settings, and one resource per provider and per account.

The compute reads the provider and account it runs on from these resources: providers.yaml is read once,
when the definitions are built. Credentials are never resource config: an account names the variable that
holds its credential, and only the Attempt's subprocess environment ever sees the value.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, TypeVar

from dagster import ConfigurableResource

from awp_pipelines.catalog import AccountSpec, Catalog, ProviderSpec
from awp_pipelines.errors import PacketError
from awp_pipelines.model.simulate import SimulateSpec
from awp_pipelines.packet import normalize_id
from awp_pipelines.validation import validate_doc
from awp_pipelines.yamlsrc import parse_yaml

RUNTIME_KEY = "awp"


def provider_key(name: str) -> str:
    return "provider_" + "".join(c if c.isalnum() else "_" for c in name)


def account_key(name: str) -> str:
    return "account_" + "".join(c if c.isalnum() else "_" for c in name)


class AwpRuntime(ConfigurableResource):
    """Where state goes and how Attempts end."""

    state_dir: str | None = None  # default: <packet>/.awp
    commit: bool = True
    simulate_overlay: str | None = None  # test-only: {prompt id: simulate spec}

    def state_root(self, packet_root: Path) -> Path:
        root = Path(self.state_dir) if self.state_dir else packet_root / ".awp"
        root.mkdir(parents=True, exist_ok=True)
        # A packet may live inside a target repo: `git add -A` must never commit AWP's own state.
        ignore = root / ".gitignore"
        if not ignore.exists():
            ignore.write_text("*\n", encoding="utf-8")
        return root

    def overlay_for(self, prompt_id: str) -> SimulateSpec | None:
        if not self.simulate_overlay:
            return None
        file = Path(self.simulate_overlay)
        doc = parse_yaml(file.read_text(encoding="utf-8"), file)
        data = doc.data or {}
        if not isinstance(data, dict):
            raise PacketError(file, "a simulate overlay maps prompt ids to simulate blocks", line=1)
        spec = {normalize_id(str(k)): v for k, v in data.items()}.get(prompt_id)
        return validate_doc(SimulateSpec, doc, data=spec) if spec is not None else None


class ProviderResource(ConfigurableResource):
    """One provider from resources/providers.yaml; which one an Attempt uses comes from its launch."""

    name: str
    kind: str
    command: str | None = None
    base_url: str | None = None
    default_model: str | None = None
    credential_env: str | None = None
    config_dir_env: str | None = None

    def spec(self) -> ProviderSpec:
        return ProviderSpec.model_validate(self.model_dump(exclude={"name"}))


class AccountResource(ConfigurableResource):
    name: str
    provider: str
    credential_env: str | None = None
    config_dir: str | None = None
    base_url: str | None = None  # the account's own endpoint: the probe and the Attempt use it over the provider's
    cooldown_s: int = 3600

    def secrets(self) -> dict[str, str]:
        """{variable: value} of this account's credential, read from the environment at run time."""
        var = self.credential_env
        return {var: os.environ[var]} if var and os.environ.get(var) else {}

    def spec(self) -> AccountSpec:
        return AccountSpec.model_validate(self.model_dump(exclude={"name"}))


R = TypeVar("R", bound=ConfigurableResource)
# Equal config, one object: Dagster merges definitions (several packets, several components) only when a
# resource key maps to the very same object.
_CANONICAL: dict[str, ConfigurableResource] = {}


def canonical(resource: R) -> R:
    key = f"{type(resource).__qualname__}:{json.dumps(resource.model_dump(), sort_keys=True)}"
    found = _CANONICAL.setdefault(key, resource)
    assert isinstance(found, type(resource))  # the key names the class: an equal key holds the same class
    return found


def catalog_resources(catalog: Catalog, providers: set[str] | None = None,
                      accounts: set[str] | None = None) -> dict[str, ConfigurableResource]:
    """Resources for the named providers and accounts (all of the catalog's when not named)."""
    out: dict[str, ConfigurableResource] = {}
    for name, spec in catalog.providers.items():
        if providers is None or name in providers:
            out[provider_key(name)] = canonical(ProviderResource(name=name, **_fields(spec, ProviderResource)))
    for name, account in catalog.accounts.items():
        if accounts is None or name in accounts:
            out[account_key(name)] = canonical(AccountResource(name=name, **_fields(account, AccountResource)))
    return out


def _fields(spec: ProviderSpec | AccountSpec, resource: type[ConfigurableResource]) -> dict[str, Any]:
    wanted = set(resource.model_fields) - {"name"}
    return {k: v for k, v in spec.model_dump().items() if k in wanted}
