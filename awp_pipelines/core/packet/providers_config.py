"""Providers, accounts and model aliases (`resources/providers.yaml`), over built-in defaults."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, PrivateAttr, StringConstraints, model_validator

from awp_pipelines.core.isolation.limits import LIMITS_HELP, ResourceLimits
from awp_pipelines.core.isolation.network_policy import NETWORK_HELP
from awp_pipelines.core.isolation.network_setting import NetworkSetting
from awp_pipelines.core.isolation.profile import ISOLATION_HELP, Isolation
from awp_pipelines.core.packet.agents import AgentSpec
from awp_pipelines.core.packet.catalog_layers import Origin, Origins, layer_over
from awp_pipelines.core.packet.model.base import StrictModel
from awp_pipelines.core.packet.model.execution import Effort, Rotation, TargetSpec
from awp_pipelines.core.packet.model.pathtext import PathText
from awp_pipelines.core.packet.validation import validate_doc
from awp_pipelines.core.packet.yamlsrc import YamlDoc, parse_yaml

# Plain settings for the agent's process (`env:` of a provider or account): never a credential, which has its
# own variable; names only in the usual shell spelling.
SettingName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]
SETTINGS_HELP = ("Plain settings (never a credential) set in the agent's environment, e.g. IS_SANDBOX: '1' so "
                 "Claude Code accepts permission_mode bypass as root inside a container.")

ProviderKind = Literal["claude_code", "codex", "opencode", "gemini", "amp", "openai_http", "command", "simulated"]


class ProviderSpec(StrictModel):
    kind: ProviderKind = Field(description="Adapter that runs this provider.")
    command: PathText | None = Field(None, description="Executable for CLI kinds; default the kind's usual name.")
    base_url: str | None = Field(None, description="Endpoint: the chat-completions URL root for openai_http; a "
                                 "gateway or proxy for the CLI kinds (ANTHROPIC_BASE_URL for Claude Code, a "
                                 "model provider base_url for Codex and OpenCode).")
    default_model: str | None = Field(None, description="Model used when a prompt names none.")
    credential_env: str | None = Field(None, description="Variable holding the credential when no account is set.")
    config_dir_env: str | None = Field(None, description="Variable the CLI reads its config folder from.")
    models: list[str] = Field(default_factory=list, description="Model-name prefixes this provider serves "
                              "(used to infer the provider from a model).")
    env: dict[SettingName, str] = Field(default_factory=dict, description=SETTINGS_HELP)
    isolation: Isolation | None = Field(None, description=ISOLATION_HELP)
    limits: ResourceLimits | None = Field(None, description=LIMITS_HELP)
    network: NetworkSetting | None = Field(None, description=NETWORK_HELP + " In the sandbox only.")


class AccountSpec(StrictModel):
    provider: str = Field(description="Provider this account belongs to.")
    credential_env: str | None = Field(None, description="Variable holding this account's credential "
                                       "(its name is recorded, never its value).")
    config_dir: PathText | None = Field(None, description="This account's own CLI config folder.")
    base_url: str | None = Field(None, description="Endpoint for this account; overrides the provider's.")
    cooldown_s: int = Field(3600, ge=0, description="How long the account rests after exhaustion.")
    env: dict[SettingName, str] = Field(default_factory=dict, description=SETTINGS_HELP + " Over the provider's.")
    isolation: Isolation | None = Field(None, description=ISOLATION_HELP + " Over the provider's.")
    network: NetworkSetting | None = Field(None, description=NETWORK_HELP + " Over the provider's.")


class AccountBinding(StrictModel):
    """An account resolved for one Attempt: names and paths only, never the credential's value."""

    name: str = Field(description="Account name.")
    provider: str = Field(description="Provider the account belongs to.")
    credential_env: str | None = Field(None, description="Variable holding the credential in AWP's environment.")
    config_dir: str | None = Field(None, description="The account's config folder, user-expanded.")
    base_url: str | None = Field(None, description="The account's endpoint, else the provider's.")
    cooldown_s: int = Field(3600, ge=0, description="Rest after exhaustion when the provider names no reset.")
    env: dict[str, str] = Field(default_factory=dict, description="The account's plain settings for the agent.")
    isolation: Isolation | None = Field(None, description="The account's `isolation`, if it sets one.")
    network: NetworkSetting | None = Field(None, description="The account's `network`, if it sets one.")


class AliasSpec(StrictModel):
    targets: list[TargetSpec] = Field(min_length=1, description="Ordered chain; the first is the primary.")
    rotation: Rotation = Field(
        "on_exhaustion", description="How a target's accounts are chosen: fill_first (= on_exhaustion, none) uses "
        "the first until it is exhausted; between_attempts moves on with every Attempt; round_robin takes the one "
        "used longest ago; least_used the one with the fewest Attempts. Cooling accounts are skipped.")
    effort: Effort | None = Field(None, description="Default effort for the chain's targets.")
    fallback: list[str] = Field(default_factory=list, description="Aliases (or providers) the chain goes on with "
                                "after its own targets, e.g. factory-free-useful → factory-free-fallback.")


def alias_cycle(aliases: dict[str, AliasSpec], start: str, path: tuple[str, ...] = ()) -> tuple[str, ...] | None:
    """The aliases from `start` down its `fallback` entries back to one already on the way; None: it ends."""
    if start in path:
        return (*path, start)
    for entry in aliases[start].fallback:
        if entry in aliases:
            cycle = alias_cycle(aliases, entry, (*path, start))
            if cycle is not None:
                return cycle
    return None


class Catalog(StrictModel):
    providers: dict[str, ProviderSpec] = Field(default_factory=dict, description="Provider name → spec.")
    accounts: dict[str, AccountSpec] = Field(default_factory=dict, description="Account name → spec.")
    aliases: dict[str, AliasSpec] = Field(default_factory=dict, description="Model alias → target chain.")
    agents: dict[str, AgentSpec] = Field(default_factory=dict, description="Agent name → definition (role, "
                                         "capability, allowed providers and models, template); a prompt's "
                                         "`agent:` names one, or a built-in role.")
    # Which layer (the built-ins, a file and line) set each field of each entry: catalog_layers.py.
    _origins: Origins = PrivateAttr(default_factory=dict)

    @model_validator(mode="after")
    def _no_fallback_cycle(self) -> Catalog:
        """Aliases may chain aliases (`fallback:`), never back to one already in the chain: say which."""
        for start in self.aliases:
            cycle = alias_cycle(self.aliases, start)
            if cycle is not None:
                raise ValueError(f"aliases: the fallback chain {' → '.join(cycle)} comes back to {cycle[-1]}: a "
                                 "chain ends; remove one of these `fallback` entries")
        return self

    def origins(self, section: str, name: str) -> dict[str, Origin]:
        """Field → where it was set, for `section` (providers, accounts) entry `name`; "" is the entry."""
        return self._origins.get(f"{section}.{name}", {})

    def merged_over(self, base: Catalog) -> Catalog:
        """This catalog over `base`, field by field, as load_catalog lays a file over the built-ins."""
        data, origins = layer_over(base.entries(), YamlDoc(Path("(code)"), self.entries()), base._origins)
        catalog = Catalog.model_validate(data)
        catalog._origins = origins
        return catalog

    def set_by(self, section: str, name: str, field: str) -> str:
        """The layer that set `field` of entry `name`: built-in, FILE:LINE, or default (no layer did)."""
        origin = self.origins(section, name).get(field)
        return origin.label if origin is not None else "default"

    def entries(self) -> dict[str, dict[str, dict[str, Any]]]:
        """Section → name → the fields set (as written), for layering another file over this catalog."""
        return {section: {name: spec.model_dump(exclude_unset=True) for name, spec in getattr(self, section).items()}
                for section in type(self).model_fields}

    def accounts_of(self, accounts: list[str], provider: str) -> list[str]:
        """Those of `accounts` declared for `provider`: a fallback never borrows another provider's login."""
        return [a for a in accounts if a in self.accounts and self.accounts[a].provider == provider]

    def first_account(self, accounts: list[str], provider: str) -> str | None:
        return next(iter(self.accounts_of(accounts, provider)), None)

    def binding(self, account: str | None) -> AccountBinding | None:
        spec = self.accounts.get(account) if account else None
        if spec is None or account is None:
            return None
        provider = self.providers.get(spec.provider)
        return AccountBinding(name=account, provider=spec.provider, credential_env=spec.credential_env,
                              config_dir=os.path.expanduser(spec.config_dir) if spec.config_dir else None,
                              base_url=spec.base_url or (provider.base_url if provider else None),
                              cooldown_s=spec.cooldown_s, env=dict(spec.env), isolation=spec.isolation,
                              network=spec.network)

    def account_secrets(self, account: str | None) -> dict[str, str]:
        """The account's own credential, for the agent's environment and for redaction: nothing else secret."""
        spec = self.accounts.get(account) if account else None
        value = os.environ.get(spec.credential_env) if spec is not None and spec.credential_env else None
        return {spec.credential_env: value} if spec is not None and spec.credential_env and value else {}

    def infer_provider(self, model: str) -> str | None:
        """Longest matching model prefix wins (Prompt Runner infers the provider from the model)."""
        best: tuple[int, str] | None = None
        for name, spec in self.providers.items():
            for prefix in spec.models:
                if model.startswith(prefix) and (best is None or len(prefix) > best[0]):
                    best = (len(prefix), name)
        return best[1] if best else None


BUILTIN = Catalog(
    providers={
        "claude": ProviderSpec(kind="claude_code", command="claude", default_model="haiku",
                               credential_env="ANTHROPIC_API_KEY", config_dir_env="CLAUDE_CONFIG_DIR",
                               models=["haiku", "sonnet", "opus", "claude"]),
        "codex": ProviderSpec(kind="codex", command="codex", credential_env="OPENAI_API_KEY",
                              config_dir_env="CODEX_HOME", models=["gpt-", "o3", "o4", "codex"]),
        "opencode": ProviderSpec(kind="opencode", command="opencode", models=["opencode/"]),
        "gemini": ProviderSpec(kind="gemini", command="gemini", credential_env="GEMINI_API_KEY",
                               config_dir_env="GEMINI_CLI_HOME", models=["gemini"]),
        # Amp's model is its agent mode (low, medium, high, ultra): the mode picks the model (amp.py).
        "amp": ProviderSpec(kind="amp", command="amp", default_model="medium", credential_env="AMP_API_KEY",
                            config_dir_env="XDG_CONFIG_HOME"),
        "simulated": ProviderSpec(kind="simulated", default_model="simulated-demo", models=["simulated"]),
    },
)

BUILTIN._origins = {f"{section}.{name}": dict.fromkeys(fields, Origin())
                    for section, entries in BUILTIN.entries().items() for name, fields in entries.items()}

# Prompt Runner's provider names map onto ours.
PROVIDER_ALIASES = {"claude_code": "claude", "anthropic": "claude", "openai": "codex"}


def default_catalog_file() -> Path | None:
    env = os.environ.get("AWP_PROVIDERS")
    if env:
        return Path(env)
    candidate = Path.cwd() / "resources" / "providers.yaml"
    return candidate if candidate.is_file() else None


def load_catalog(file: Path | None = None) -> Catalog:
    file = file or default_catalog_file()
    if file is None:
        return BUILTIN
    doc = parse_yaml(file.read_text(encoding="utf-8"), file)
    if doc.data is None:
        return BUILTIN
    # Field by field over the built-ins (catalog_layers.py), so a short entry keeps what it does not write.
    data, origins = layer_over(BUILTIN.entries(), doc, BUILTIN._origins)
    catalog = validate_doc(Catalog, doc, data)
    catalog._origins = origins
    return catalog
