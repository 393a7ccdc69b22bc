"""The fully resolved, printable plan: what each prompt will run with, and which layer said so.

Precedence, lowest first: defaults → env (AWP_PROVIDER, AWP_MODEL) → home profile (config.md, then the
named profile) → packet manifest → prompt front matter → CLI flags.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from awp_pipelines.core.packet import home_profile as home
from awp_pipelines.core.packet.agents import ROLES, AgentSpec, agent_of
from awp_pipelines.core.packet.bounds import Bounds, derive_bounds
from awp_pipelines.core.packet.errors import PacketError
from awp_pipelines.core.packet.model.budget import BudgetConfig
from awp_pipelines.core.packet.model.execution import ExecutionSettings, Rotation, TargetSpec
from awp_pipelines.core.packet.model.handoff import HandoffSpec
from awp_pipelines.core.packet.model.manifest import DirtyTreePolicy
from awp_pipelines.core.packet.model.recovery import RecoveryConfig
from awp_pipelines.core.packet.packet import Packet, Prompt
from awp_pipelines.core.packet.providers_config import PROVIDER_ALIASES, AccountBinding, AliasSpec, Catalog
from awp_pipelines.core.planning.catalog_plan import CatalogEntryPlan, used_entries
from awp_pipelines.core.planning.selection import Selection
from awp_pipelines.core.verifiers.items import contract_items

DEFAULTS: dict[str, Any] = {"model": "haiku", "agent": "coder"}
ENV_KEYS = {"AWP_PROVIDER": "provider", "AWP_MODEL": "model"}


@dataclass
class Layer:
    name: str
    values: dict[str, Any]


@dataclass
class Overrides:
    """CLI flags: the last layer."""

    provider: str | None = None
    model: str | None = None
    effort: str | None = None
    profile: str | None = None

    def values(self) -> dict[str, Any]:
        raw = {"provider": self.provider, "model": self.model, "reasoning_effort": self.effort}
        return {k: v for k, v in raw.items() if v is not None}


class WorkRepo(BaseModel):
    """A repository the prompt works in (its front matter's `targets:`, Prompt Runner's key). In the code,
    "target" is only where an Attempt runs: provider, model, account."""

    name: str
    path: str


class VerifyItemPlan(BaseModel):
    kind: str
    check_name: str
    label: str


class PromptPlan(BaseModel):
    id: str
    name: str
    file: str
    phase: str | None
    agent: str
    role: str = Field("coder", description="The role the `agent` word resolves to (a built-in role, or the "
                      "catalog agent's role).")
    agent_providers: list[str] = Field(default_factory=list, description="The providers its agent's definition "
                                       "allows (empty: any): every choice of target keeps to them.")
    agent_models: list[str] = Field(default_factory=list, description="The model prefixes its agent's definition "
                                    "allows (empty: any).")
    independent_of: list[str] = Field(default_factory=list, description="A reviewer's upstream coder prompts: it "
                                      "never runs on a provider and account they used in the packet run.")
    provider: str
    model: str
    effort: str | None
    accounts: list[str]
    fallback: list[TargetSpec]
    rotation: Rotation = Field("fill_first", description="How the account of a target with several is picked "
                               "(the model alias's `rotation`).")
    probe: bool = Field(False, description="The primary target is checked for availability just before it is "
                        "chosen (the alias's `probe: true`).")
    permission_mode: str | None
    allowed_tools: list[str] = Field(default_factory=list, description="Tools the agent may use.")
    isolation: str | None = Field(None, description="The packet's `isolation` (sandbox | none); None: the "
                                  "provider's or account's, else the sandbox.")
    network: list[str] | None = Field(None, description="The packet's `network`; None: the account's or "
                                    "provider's, else `provider`.")
    max_turns: int | None = None
    system_prompt: str | None = Field(None, description="Replaces the provider's system prompt.")
    append_system_prompt: str | None = Field(None, description="Appended to the provider's system prompt.")
    profile: str | None = Field(None, description="The home profile named (`profile:` or --profile).")
    cli_confirmation: str | None = Field(None, description="off | warn | require: whether the provider must "
                                         "report the model it was asked for (confirmation.py); unset: off.")
    account_bindings: dict[str, AccountBinding] = Field(
        default_factory=dict, description="Every account the prompt's chain may use, resolved: variable names "
        "and folders, never a credential's value.")
    argv: list[str] | None = Field(None, description="The exact command the primary target runs, the prompt "
                                   "as <prompt> and secrets masked; None for kinds without one (simulated).")
    sources: dict[str, str] = Field(description="Which layer set provider, model, effort, …")
    bounds: Bounds
    recovery: RecoveryConfig
    budget: BudgetConfig | None = Field(None, description="Caps of this prompt's AgentRun (front matter).")
    verify_items: list[VerifyItemPlan]
    commit_message: str
    repos: list[WorkRepo]
    cwd: str
    depends_on: list[str]
    simulated_attempts: int


class PacketPlan(BaseModel):
    packet: str
    root: str
    manifest: str
    profile: str | None
    warnings: list[str]
    budget: BudgetConfig | None = Field(None, description="Caps of the whole packet run (manifest).")
    dirty_tree: DirtyTreePolicy = Field("refuse", description="What an Attempt does with a person's changes in its "
                                        "work tree (manifest `dirty_tree`).")
    prompts: list[PromptPlan]
    handoff: dict[str, HandoffSpec] = Field(default_factory=dict, description="Repo → where a packet run's work "
                                            "in it is handed off as a pull request when the run ends (manifest "
                                            "`repos.<name>.handoff`).")
    catalog: list[CatalogEntryPlan] = Field(
        default_factory=list, description="The providers and accounts the prompts may use, each field with the "
        "layer that set it (built-in, providers.yaml:LINE, default).")

    def uses(self) -> tuple[list[str], list[str]]:
        return chain_uses(self.prompts)


def chain_uses(prompts: list[PromptPlan]) -> tuple[list[str], list[str]]:
    """The providers and the accounts the prompts' chains may use, in order."""
    providers = [name for p in prompts for name in (p.provider, *(t.provider for t in p.fallback))]
    return providers, [a for p in prompts for a in (*p.accounts, *p.account_bindings)]


@dataclass
class PlanContext:
    catalog: Catalog
    overrides: Overrides = field(default_factory=Overrides)
    env: dict[str, str] | None = None


def base_layers(packet: Packet, ctx: PlanContext) -> tuple[list[Layer], list[str]]:
    env = os.environ if ctx.env is None else ctx.env
    warnings: list[str] = []
    layers = [Layer("default", dict(DEFAULTS)),
              Layer("env", {key: env[var] for var, key in ENV_KEYS.items() if env.get(var)})]
    glob = home.load_global()
    if glob:
        layers.append(Layer(f"home:{glob.file}", _explicit(glob.settings)))
    profile_name = ctx.overrides.profile or packet.manifest.profile
    if profile_name:
        loaded = home.load_profile(profile_name)
        if loaded:
            layers.append(Layer(f"profile:{profile_name}", _explicit(loaded.settings)))
        else:
            warnings.append(f"profile '{profile_name}' not found in {' or '.join(map(str, home.profile_dirs()))}; "
                            "using packet settings")
    layers.append(Layer("packet", _explicit(packet.manifest, ExecutionSettings.model_fields)))
    return layers, warnings


def _explicit(model: BaseModel, keys: Any = None) -> dict[str, Any]:
    keys = keys if keys is not None else type(model).model_fields
    return {k: getattr(model, k) for k in model.model_fields_set if k in keys}


def resolve(layers: list[Layer]) -> tuple[dict[str, Any], dict[str, str]]:
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for layer in layers:
        for key, value in layer.values.items():
            if value is not None:
                values[key] = value
                sources[key] = layer.name
    return values, sources


def _provider_name(name: str) -> str:
    return PROVIDER_ALIASES.get(name, name)


def alias_fallback(alias: AliasSpec, targets: list[TargetSpec] | None = None) -> list[TargetSpec]:
    """An alias's targets as fallback targets, each keeping the alias's rotation unless it sets its own."""
    return [t if t.rotation else t.model_copy(update={"rotation": alias.rotation})
            for t in (alias.targets if targets is None else targets)]


def expand_fallback(entries: list[str | TargetSpec] | None, catalog: Catalog,
                    seen: frozenset[str] = frozenset()) -> list[TargetSpec]:
    """Fallback entries as targets: an alias gives its targets, then its own `fallback` aliases (each alias
    once, so aliases that name each other end)."""
    chain: list[TargetSpec] = []
    for entry in entries or []:
        if isinstance(entry, TargetSpec):
            chain.append(entry)
        elif entry in catalog.aliases:
            if entry not in seen:
                alias = catalog.aliases[entry]
                chain.extend(alias_fallback(alias))
                chain.extend(expand_fallback(list(alias.fallback), catalog, seen | {entry}))
        else:
            chain.append(TargetSpec(provider=_provider_name(entry)))
    return chain


def plan_prompt(packet: Packet, prompt: Prompt, layers: list[Layer], ctx: PlanContext) -> PromptPlan:
    prompt_layer = Layer("prompt", _explicit(prompt.front, ExecutionSettings.model_fields))
    all_layers = [*layers, prompt_layer, Layer("cli", ctx.overrides.values())]
    layers_order = [layer.name for layer in all_layers]
    values, sources = resolve(all_layers)
    catalog = ctx.catalog
    model = str(values.get("model", DEFAULTS["model"]))
    fallback: list[TargetSpec] = []
    alias = catalog.aliases.get(model)
    accounts: list[str] = list(values.get("accounts") or [])
    effort = values.get("reasoning_effort")
    rotation: Rotation = "fill_first"
    probe = False
    if alias:
        alias_key = model
        primary, *rest = alias.targets
        provider = _provider_name(primary.provider)
        spec = catalog.providers.get(provider)
        model = primary.model or (spec.default_model if spec else None) or model
        if not effort and (primary.effort or alias.effort):
            effort = primary.effort or alias.effort
            sources["reasoning_effort"] = f"alias {alias_key}"
        if not accounts and primary.accounts:
            accounts = list(primary.accounts)
            sources["accounts"] = f"alias {alias_key}"
        fallback.extend(alias_fallback(alias, rest))
        fallback.extend(expand_fallback(list(alias.fallback), catalog, frozenset({alias_key})))
        rotation, probe = alias.rotation, primary.probe
        sources["provider"] = sources["model"] = f"{sources.get('model', 'default')} (alias {alias_key})"
    else:
        explicit = values.get("provider")
        inferred = catalog.infer_provider(model)
        # A model set in a later layer than the provider names its own provider (e.g. --model gpt-5 on a
        # claude packet): keeping the older provider would send a GPT model to Claude.
        model_is_newer = _layer_rank(sources.get("model"), layers_order) > _layer_rank(sources.get("provider"),
                                                                                       layers_order)
        if explicit and not (model_is_newer and inferred and inferred != _provider_name(str(explicit))):
            provider = _provider_name(str(explicit))
        else:
            provider = inferred or "claude"
            sources["provider"] = f"inferred from model '{model}'"
    fallback.extend(expand_fallback(values.get("fallback"), catalog))
    try:
        # Prompt Runner: `timeout`, else `adapter_opts.timeout`.
        adapter_timeout = (values.get("adapter_opts") or {}).get("timeout")
        if values.get("timeout") is None and adapter_timeout is not None:
            sources["timeout"] = f"{sources['adapter_opts']} (adapter_opts.timeout)"
        bounds = derive_bounds(values["timeout"] if values.get("timeout") is not None else adapter_timeout)
    except ValueError as err:
        raise PacketError(prompt.file, str(err), key="timeout") from None
    repos = packet.repos
    repo_names = prompt.front.targets or ([packet.default_repo] if packet.default_repo else [])
    work_repos = [WorkRepo(name=n, path=str(repos[n].path)) for n in repo_names if n in repos]
    contract = prompt.front.verify
    items = contract_items(contract) if contract is not None else []
    chain_accounts = [*accounts, *(a for t in fallback for a in t.accounts or [])]
    bindings = {a: b for a in chain_accounts if (b := catalog.binding(a)) is not None}
    agent = agent_of(str(values.get("agent", "coder")), catalog.agents)
    _apply_agent(agent, str(values.get("agent", "coder")), values, sources)
    allowed_tools = list(values.get("allowed_tools") or [])
    cwd = work_repos[0].path if work_repos else str(packet.root)
    primary_account = catalog.first_account(accounts, provider)
    argv = agent_argv(catalog, provider, model=model, effort=effort, permission_mode=values.get("permission_mode"),
                      allowed_tools=allowed_tools, max_turns=values.get("max_turns"),
                      account=bindings.get(primary_account or ""), cwd=cwd, timeout_ms=bounds.timeout_ms,
                      system_prompt=values.get("system_prompt"),
                      append_system_prompt=values.get("append_system_prompt"))
    return PromptPlan(
        id=prompt.id, name=prompt.name, file=str(prompt.file),
        phase=None if prompt.front.phase is None else str(prompt.front.phase),
        agent=str(values.get("agent", "coder")), role=_role(packet, prompt, values, sources, catalog),
        provider=provider, model=model, effort=effort,
        accounts=accounts, fallback=fallback, rotation=rotation, probe=probe,
        agent_providers=list(agent.providers) if agent else [], agent_models=list(agent.models) if agent else [],
        permission_mode=values.get("permission_mode"),
        allowed_tools=allowed_tools, isolation=values.get("isolation"), network=values.get("network"),
        max_turns=values.get("max_turns"),
        account_bindings=bindings, argv=argv,
        system_prompt=values.get("system_prompt"), append_system_prompt=values.get("append_system_prompt"),
        cli_confirmation=values.get("cli_confirmation"), profile=ctx.overrides.profile or packet.manifest.profile,
        sources={k: sources[k] for k in ("provider", "model", "reasoning_effort", "timeout", "accounts",
                                         "permission_mode", "allowed_tools", "isolation")
                 if k in sources and (k not in _AGENT_KEYS or sources[k].startswith("agent "))},
        bounds=bounds, recovery=prompt.recovery, budget=prompt.front.budget,
        verify_items=[VerifyItemPlan(kind=i.kind, check_name=i.check_name, label=i.label) for i in items],
        commit_message=commit_message(prompt), repos=work_repos,
        cwd=cwd,
        depends_on=packet.dependencies(prompt),
        simulated_attempts=len(prompt.front.simulate.attempts) if prompt.front.simulate else 0,
    )


def agent_argv(catalog: Catalog, provider: str, *, model: str | None, effort: str | None,
               permission_mode: str | None, allowed_tools: list[str], max_turns: int | None,
               account: AccountBinding | None, cwd: str, timeout_ms: int, system_prompt: str | None = None,
               append_system_prompt: str | None = None) -> list[str] | None:
    """What the adapter would run, for the plan: the prompt as a placeholder, secrets masked."""
    spec = catalog.providers.get(provider)
    if spec is None or spec.kind == "simulated":
        return None
    from awp_pipelines.core.providers.base import ProviderRequest
    from awp_pipelines.core.providers.registry import adapter_for

    try:
        adapter = adapter_for(spec, provider)
        request = ProviderRequest(prompt_text="<prompt>", cwd=Path(cwd), timeout_ms=timeout_ms, model=model,
                                  effort=effort, permission_mode=permission_mode, allowed_tools=tuple(allowed_tools),
                                  max_turns=max_turns, account=account, system_prompt=system_prompt,
                                  append_system_prompt=append_system_prompt,
                                  env=catalog.account_secrets(account.name if account else None))
        # CLI and HTTP adapters show their argv; the ProviderAdapter protocol does not promise it.
        show = getattr(adapter, "display_argv", None)
        return list(show(request)) if callable(show) else None
    except (PacketError, ValueError):
        return None


def build_plan(packet: Packet, ctx: PlanContext, selection: Selection | None = None) -> PacketPlan:
    layers, warnings = base_layers(packet, ctx)
    prompts = (selection or Selection()).apply(packet)
    planned = {p.id: plan_prompt(packet, p, layers, ctx) for p in prompts}
    known = {p.id for p in packet.prompts}

    def role(pid: str) -> str | None:  # an upstream prompt outside the selection is planned for its role only
        if pid not in known:
            return None  # a depends_on naming no prompt: lint's unknown_depends_on says so, plan and run refuse it
        if pid not in planned:
            planned[pid] = plan_prompt(packet, packet.prompt(pid), layers, ctx)
        return planned[pid].role

    reviewed = {p.id: [d for d in planned[p.id].depends_on if role(d) == "coder"] for p in prompts
                if planned[p.id].role == "reviewer"}
    plan = PacketPlan(packet=packet.name, root=str(packet.root), manifest=str(packet.manifest_file),
                      profile=ctx.overrides.profile or packet.manifest.profile, warnings=warnings,
                      budget=packet.manifest.budget, dirty_tree=packet.manifest.dirty_tree,
                      handoff={name: repo.handoff for name, repo in packet.repos.items() if repo.handoff},
                      prompts=[planned[p.id].model_copy(update={"independent_of": reviewed.get(p.id, [])})
                               for p in prompts])
    return plan.model_copy(update={"catalog": used_entries(ctx.catalog, *plan.uses())})


_AGENT_KEYS = ("permission_mode", "allowed_tools", "isolation")


def _apply_agent(agent: AgentSpec | None, word: str, values: dict[str, Any], sources: dict[str, str]) -> None:
    """The agent's definition over the layers: its permission mode wins, its tools narrow the prompt's, and
    `isolation: sandbox` wins over `none` (the stricter word); each key it set names it in `sources`."""
    if agent is None:
        return
    applied: dict[str, Any] = {}
    if agent.permission_mode is not None:
        applied["permission_mode"] = agent.permission_mode
    if agent.allowed_tools is not None:
        mine = values.get("allowed_tools")
        applied["allowed_tools"] = [t for t in mine if t in agent.allowed_tools] if mine else list(agent.allowed_tools)
    if agent.isolation == "sandbox" or (agent.isolation == "none" and values.get("isolation") is None):
        applied["isolation"] = agent.isolation
    for key, value in applied.items():
        values[key] = value
        sources[key] = f"agent {word}"


def _role(packet: Packet, prompt: Prompt, values: dict[str, Any], sources: dict[str, str], catalog: Catalog) -> str:
    """The role the prompt's `agent:` word resolves to; an unknown word is an error where it is written."""
    word = str(values.get("agent", "coder"))
    spec = agent_of(word, catalog.agents)
    if spec is not None:
        return spec.role
    doc = prompt.doc if sources.get("agent") == "prompt" else packet.doc if sources.get("agent") == "packet" else None
    *first, last = (f"'{r}'" for r in ROLES)
    allowed = f"{', '.join(first)} or {last}"
    agents = f"; agents of providers.yaml: {', '.join(catalog.agents)}" if catalog.agents else ""
    raise PacketError(doc.file if doc else prompt.file, f"invalid value {word!r}; allowed: {allowed}{agents}",
                      key="agent", line=doc.line_of(("agent",)) if doc else None)


def _layer_rank(name: str | None, order: list[str]) -> int:
    return order.index(name) if name in order else -1


_CONVENTIONAL = re.compile(r"^[a-z]+(\([^)]*\))?!?: ")
_MISSION = re.compile(r"^##\s+Mission\s*$", re.MULTILINE)


def commit_message(prompt: Prompt) -> str:
    """Prompt Runner's rule: `commit:`, else the Mission's first line as `feat: …`, else `feat: <name>`."""
    if prompt.front.commit:
        return prompt.front.commit
    match = _MISSION.search(prompt.body)
    if match:
        for line in prompt.body[match.end():].splitlines():
            text = line.strip()
            if text.startswith("#"):
                break
            if text:
                return text if _CONVENTIONAL.match(text) else f"feat: {text}"
    return f"feat: {prompt.name}"
