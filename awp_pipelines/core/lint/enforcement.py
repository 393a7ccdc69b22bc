"""Settings nobody would enforce: a `permission_mode` or `allowed_tools` that neither the prompt's provider
nor AWP's sandbox enforces (providers/enforcement.py) is an error; an agent run with `isolation: none` is
said so."""

from __future__ import annotations

from awp_pipelines.core.isolation.profile import resolve_profile
from awp_pipelines.core.packet.packet import Prompt
from awp_pipelines.core.planning.plan import PromptPlan
from awp_pipelines.core.providers.enforcement import permission_enforcer, tools_enforcer

from .context import LintContext
from .where import resolved_at


def lint_prompt(ctx: LintContext, prompt: Prompt, plan: PromptPlan) -> None:
    catalog = ctx.catalog
    for target in dict.fromkeys([plan.provider, *(t.provider for t in plan.fallback)]):
        spec = catalog.providers.get(target)
        if spec is None:
            continue
        account = catalog.binding(catalog.first_account(plan.accounts, target))
        isolation = plan.isolation if plan.isolation in ("sandbox", "none") else None
        profile = resolve_profile(spec.kind, packet=isolation,  # type: ignore[arg-type]
                                  account=(account.name, account.isolation) if account else None,
                                  provider=(target, spec.isolation))
        sandboxed = profile.isolation == "sandbox"
        if permission_enforcer(spec.kind, plan.permission_mode, sandboxed) == "not enforced":
            where, note = resolved_at(ctx.packet, prompt, plan, "permission_mode")
            fix = ("run it in the sandbox (remove `isolation: none`), which mounts the work trees read-only"
                   if plan.permission_mode == "plan" else "remove it, or use a provider that honours it")
            ctx.add("permission_not_enforced", where, f"permission_mode {plan.permission_mode} is enforced neither "
                    f"by provider {target} ({spec.kind}) nor by AWP's sandbox{note}", hint=fix)
        if tools_enforcer(spec.kind, plan.allowed_tools, plan.permission_mode) == "not enforced":
            where, note = resolved_at(ctx.packet, prompt, plan, "allowed_tools")
            ctx.add("tools_not_enforced", where, f"allowed_tools is enforced neither by provider {target} "
                    f"({spec.kind}), which has no tool allow-list, nor by AWP's sandbox{note}",
                    hint="remove it, or use a provider that honours it (claude_code, gemini)")
        if profile.isolation == "none":
            where, note = resolved_at(ctx.packet, prompt, plan, "isolation")
            ctx.add("isolation_none", where, f"provider {target} runs its agent unsandboxed ({profile.set_by}): it "
                    f"can read everything the runner can{note}", hint="remove `isolation: none`")
