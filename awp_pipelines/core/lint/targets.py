"""Where a prompt runs: its provider, model alias and accounts, its fallbacks, the timeout bound, and a reviewer
independent of the coder it reviews."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from pathlib import Path

from awp_pipelines.core.packet.agents import agent_of
from awp_pipelines.core.packet.model.execution import TargetSpec
from awp_pipelines.core.packet.packet import Prompt
from awp_pipelines.core.packet.providers_config import PROVIDER_ALIASES
from awp_pipelines.core.planning.catalog_plan import login_errors
from awp_pipelines.core.planning.plan import PromptPlan

from .context import LintContext
from .report import finding
from .where import Where, resolved_at

MIN_TIMEOUT_MS = 60_000


def lint_manifest(ctx: LintContext) -> None:
    """The manifest's fallback list, and each hand-off's account (the forge token's variable)."""
    _fallback(ctx, ctx.packet.manifest.fallback, Where(ctx.packet.doc, ("fallback",)))
    repos = ctx.packet.manifest.repos
    for index, (name, repo) in enumerate(ctx.packet.manifest.repo_map().items()):
        handoff = repo.handoff
        if handoff is None or handoff.account in ctx.catalog.accounts:
            continue
        at = Where(ctx.packet.doc, ("repos", name if isinstance(repos, dict) else index, "handoff", "account"))
        ctx.add("unknown_account", at, f"hand-off account '{handoff.account}' of repo {name} is not in the "
                "catalog: the forge token's variable is an account's `credential_env`",
                hint=f"add `{handoff.account}: {{provider: {handoff.forge}, credential_env: VAR}}` under "
                "`accounts:` in providers.yaml")


def lint_prompt(ctx: LintContext, prompt: Prompt, plan: PromptPlan) -> None:
    """The prompt's resolved target (provider, model, accounts, timeout, reviewer), then its own fallback list."""
    catalog = ctx.catalog
    if plan.provider not in catalog.providers:
        where, note = resolved_at(ctx.packet, prompt, plan, "provider")
        ctx.add("unknown_provider", where, f"provider '{plan.provider}' is not in the catalog{note}",
                hint=f"known providers: {', '.join(catalog.providers)}")
    model_source = plan.sources.get("model", "")
    inferred = plan.sources.get("provider", "").startswith("inferred")
    if "(alias" not in model_source and inferred and catalog.infer_provider(plan.model) is None:
        where, note = resolved_at(ctx.packet, prompt, plan, "model")
        ctx.add("unknown_alias", where, f"model '{plan.model}' is no alias and names no provider's model{note}",
                hint=_suggest(plan.model, catalog.aliases, "aliases") + "; or set `provider:`")
    where, note = resolved_at(ctx.packet, prompt, plan, "accounts")
    _accounts(ctx, plan.accounts, plan.provider, where, note)
    if plan.bounds.timeout_ms < MIN_TIMEOUT_MS:
        where, note = resolved_at(ctx.packet, prompt, plan, "timeout")
        ctx.add("timeout_too_short", where,
                f"timeout is {plan.bounds.timeout_ms} ms, under {MIN_TIMEOUT_MS // 1000} s{note}",
                hint="a bare number is milliseconds: write '30m' or '2h'")
    _agent(ctx, prompt, plan)
    if plan.role == "reviewer":
        _reviewer_same_target(ctx, prompt, plan)
    _fallback(ctx, prompt.front.fallback, Where(prompt.doc, ("fallback",)))


def lint_logins(ctx: LintContext) -> None:
    """Each provider or account entry the plan uses that gives its agent no way to authenticate, where it is
    written in providers.yaml."""
    for err in login_errors(ctx.catalog, *ctx.plan.uses()):
        ctx.findings.append(finding("provider_cannot_login", str(err.file), err.message, line=err.line, key=err.key,
                                    hint=err.hint))


def _accounts(ctx: LintContext, accounts: Iterable[str], provider: str, where: Where | Path, note: str = "") -> None:
    for name in accounts:
        spec = ctx.catalog.accounts.get(name)
        if spec is None:
            ctx.add("unknown_account", where, f"account '{name}' is not in the catalog{note}",
                    hint=_suggest(name, ctx.catalog.accounts, "accounts"))
        elif _provider(spec.provider) != provider:
            ctx.add("unknown_account", where,
                    f"account '{name}' belongs to provider '{spec.provider}', not '{provider}'{note}",
                    hint=f"use an account of '{provider}'")


def _fallback(ctx: LintContext, entries: list[str | TargetSpec] | None, where: Where) -> None:
    aliases, providers = ctx.catalog.aliases, ctx.catalog.providers
    for index, entry in enumerate(entries or []):
        at = where.at(index)
        if isinstance(entry, str):
            if entry not in aliases and _provider(entry) not in providers:
                ctx.add("unknown_alias", at, f"fallback '{entry}' is neither an alias nor a provider",
                        hint=_suggest(entry, [*aliases, *providers], "aliases and providers"))
            continue
        provider = _provider(entry.provider)
        if provider not in providers:
            ctx.add("unknown_provider", at.at("provider"), f"fallback provider '{entry.provider}' is not in "
                    "the catalog", hint=f"known providers: {', '.join(providers)}")
        _accounts(ctx, entry.accounts or [], provider, at.at("accounts"))


def _agent(ctx: LintContext, prompt: Prompt, plan: PromptPlan) -> None:
    """The prompt's targets are ones its agent allows (an unknown `agent:` word does not plan: plan._role)."""
    where = Where(prompt.doc, ("agent",)) if "agent" in prompt.front.model_fields_set else \
        Where(ctx.packet.doc, ("agent",)) if "agent" in ctx.packet.manifest.model_fields_set else prompt.file
    spec = agent_of(plan.agent, ctx.catalog.agents)
    if spec is None:
        return
    for target in (TargetSpec(provider=plan.provider, model=plan.model), *plan.fallback):
        why = spec.refuses(target.provider, target.model)
        if why:
            ctx.add("agent_target_refused", where, f"prompt {plan.id}'s agent '{plan.agent}' may not run there: {why}",
                    hint="pick a target the agent allows, or widen its `providers`/`models`")


def _reviewer_same_target(ctx: LintContext, prompt: Prompt, plan: PromptPlan) -> None:
    for dep in plan.depends_on:
        coder = next((p for p in ctx.plan.prompts if p.id == dep), None)
        if coder is None or coder.role != "coder":
            continue
        if coder.provider == plan.provider and coder.accounts[:1] == plan.accounts[:1]:
            account = plan.accounts[0] if plan.accounts else "its default account"
            where = Where(prompt.doc, ("agent",)) if "agent" in prompt.front.model_fields_set else prompt.file
            ctx.add("reviewer_same_target", where,
                    f"reviewer {plan.id} runs on the provider and account of coder {dep} "
                    f"({plan.provider}, {account})",
                    hint="review on another provider or account, so the review is independent")


def _provider(name: str) -> str:
    return PROVIDER_ALIASES.get(name, name)


def _suggest(value: str, known: Iterable[str], what: str) -> str:
    names = list(known)
    close = difflib.get_close_matches(value, names, n=1)
    if close:
        return f"did you mean '{close[0]}'?"
    return f"known {what}: {', '.join(names) or 'none'}"
