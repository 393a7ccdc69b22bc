"""The providers and accounts a plan uses, each field with the layer that set it (built-in, FILE:LINE, default),
and the entries that leave an Attempt no way to authenticate."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, Field

from awp_pipelines.core.packet.errors import PacketError
from awp_pipelines.core.packet.providers_config import Catalog

Section = Literal["providers", "accounts"]
# Kinds whose agent needs a credential or a login: a variable holding a key, or a config folder with a login.
NEEDS_LOGIN = frozenset({"claude_code", "codex", "gemini", "amp", "openai_http"})
_CONFIG_DIR_KINDS = NEEDS_LOGIN - {"openai_http"}


class FieldSetting(BaseModel):
    value: Any = Field(description="The effective value (variable names and folders, never a credential).")
    set_by: str = Field(description="built-in, FILE:LINE of providers.yaml, or default.")


class CatalogEntryPlan(BaseModel):
    section: Section = Field(description="providers or accounts.")
    name: str
    fields: dict[str, FieldSetting] = Field(description="Each field that has a value, with its layer.")


def used_entries(catalog: Catalog, providers: Iterable[str], accounts: Iterable[str]) -> list[CatalogEntryPlan]:
    """The catalog entries of these providers and accounts, in order, each once."""
    wanted: list[tuple[Section, str]] = [("providers", p) for p in dict.fromkeys(providers) if p in catalog.providers]
    wanted += [("accounts", a) for a in dict.fromkeys(accounts) if a in catalog.accounts]
    return [_entry(catalog, section, name) for section, name in wanted]


def _entry(catalog: Catalog, section: Section, name: str) -> CatalogEntryPlan:
    spec = getattr(catalog, section)[name]
    values = spec.model_dump()
    return CatalogEntryPlan(section=section, name=name, fields={
        key: FieldSetting(value=value, set_by=catalog.set_by(section, name, key))
        for key, value in values.items() if value not in (None, [], {})})


def login_errors(catalog: Catalog, providers: Iterable[str], accounts: Iterable[str]) -> list[PacketError]:
    """A provider (of a kind that needs a login) that names no credential variable and no config-folder variable,
    with no account that does; an account that names neither a credential variable nor a config folder. Each
    would fail every Attempt as "not logged in": an error with the file and line that set the entry."""
    errors: list[PacketError] = []
    for name in dict.fromkeys(providers):
        spec = catalog.providers.get(name)
        if spec is None or spec.kind not in NEEDS_LOGIN:
            continue
        ways = [spec.credential_env, spec.config_dir_env if spec.kind in _CONFIG_DIR_KINDS else None,
                *(a.credential_env for a in catalog.accounts.values() if a.provider == name)]
        if not any(ways):
            errors.append(_error(catalog, "providers", name, f"provider '{name}' ({spec.kind}) has no way to "
                                 "authenticate: no credential_env, no config_dir_env, no account with a credential",
                                 "set credential_env (e.g. the built-in's), or leave it out so the built-in's "
                                 "applies; or add an account with credential_env"))
    for name in dict.fromkeys(accounts):
        account = catalog.accounts.get(name)
        provider = catalog.providers.get(account.provider) if account else None
        if account is None or provider is None or provider.kind not in NEEDS_LOGIN:
            continue
        if not account.credential_env and not (account.config_dir and provider.kind in _CONFIG_DIR_KINDS):
            errors.append(_error(catalog, "accounts", name, f"account '{name}' has no way to authenticate: "
                                 "no credential_env and no config_dir", "set credential_env (the variable "
                                 "holding its key) or config_dir (a folder the CLI is logged in under)"))
    return errors


def _error(catalog: Catalog, section: Section, name: str, message: str, hint: str) -> PacketError:
    origin = catalog.origins(section, name).get("")
    return PacketError(origin.file if origin and origin.file else "providers.yaml", message,
                       key=f"{section}.{name}", line=origin.line if origin else None, hint=hint)
