"""Dagster resources: the AWP runtime settings, and one resource per provider and per account.

Credentials are never resource config: an account names the variable that holds its credential, and
only the Attempt's subprocess environment ever sees the value.
"""

from __future__ import annotations

from pathlib import Path

from dagster import ConfigurableResource

from awp_pipelines.catalog import Catalog, load_catalog
from awp_pipelines.errors import PacketError
from awp_pipelines.model.simulate import SimulateSpec
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
    providers_file: str | None = None
    simulate_overlay: str | None = None  # test-only: {prompt id: simulate spec}

    def state_root(self, packet_root: Path) -> Path:
        root = Path(self.state_dir) if self.state_dir else packet_root / ".awp"
        root.mkdir(parents=True, exist_ok=True)
        # A packet may live inside a target repo: `git add -A` must never commit AWP's own state.
        ignore = root / ".gitignore"
        if not ignore.exists():
            ignore.write_text("*\n", encoding="utf-8")
        return root

    def catalog(self) -> Catalog:
        return load_catalog(Path(self.providers_file) if self.providers_file else None)

    def overlay_for(self, prompt_id: str) -> SimulateSpec | None:
        if not self.simulate_overlay:
            return None
        file = Path(self.simulate_overlay)
        doc = parse_yaml(file.read_text(encoding="utf-8"), file)
        data = doc.data or {}
        if not isinstance(data, dict):
            raise PacketError(file, "a simulate overlay maps prompt ids to simulate blocks", line=1)
        spec = {str(k).zfill(2) if str(k).isdigit() else str(k): v for k, v in data.items()}.get(prompt_id)
        return validate_doc(SimulateSpec, doc, data=spec) if spec is not None else None


class ProviderResource(ConfigurableResource):
    """One provider from resources/providers.yaml; which one an Attempt uses comes from the run's tags."""

    name: str
    kind: str
    command: str | None = None
    base_url: str | None = None
    default_model: str | None = None
    credential_env: str | None = None
    config_dir_env: str | None = None


class AccountResource(ConfigurableResource):
    name: str
    provider: str
    credential_env: str | None = None
    config_dir: str | None = None
    cooldown_s: int = 3600


def catalog_resources(catalog: Catalog) -> dict[str, ConfigurableResource]:
    resources: dict[str, ConfigurableResource] = {}
    for name, spec in catalog.providers.items():
        resources[provider_key(name)] = ProviderResource(
            name=name, kind=spec.kind, command=spec.command, base_url=spec.base_url,
            default_model=spec.default_model, credential_env=spec.credential_env,
            config_dir_env=spec.config_dir_env)
    for name, account in catalog.accounts.items():
        resources[account_key(name)] = AccountResource(
            name=name, provider=account.provider, credential_env=account.credential_env,
            config_dir=account.config_dir, cooldown_s=account.cooldown_s)
    return resources
