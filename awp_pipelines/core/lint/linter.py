"""`lint_packet`: load the packet and its plan, then run every rule in one fixed order, so findings keep theirs."""

from __future__ import annotations

from pathlib import Path

from awp_pipelines.core.packet.errors import PacketError
from awp_pipelines.core.packet.packet import Packet, load_packet
from awp_pipelines.core.packet.providers_config import Catalog
from awp_pipelines.core.planning.plan import PacketPlan, PlanContext, build_plan
from awp_pipelines.core.records.redact import Redactor

from . import contracts, enforcement, hygiene, prompts, references, settings, targets
from .context import LintContext
from .report import Finding, LintReport, finding


def lint_packet(path: Path | str, catalog: Catalog) -> LintReport:
    try:
        packet = load_packet(path)
        plan = build_plan(packet, PlanContext(catalog=catalog))
    except PacketError as err:
        return LintReport(packet=str(path), findings=[finding("invalid_packet", str(err.file), err.message,
                                                              line=err.line, key=err.key, hint=err.hint)])
    return lint_loaded(packet, catalog, plan)


def lint_loaded(packet: Packet, catalog: Catalog, plan: PacketPlan) -> LintReport:
    """The findings of a packet already loaded, and its plan of every prompt (`awp plan` and `awp run` have both)."""
    ctx = LintContext(packet, catalog, plan)
    hygiene.lint_manifest(ctx)
    references.lint_work_trees(ctx)
    targets.lint_manifest(ctx)
    prompts.lint_agent_control(ctx)
    for prompt, prompt_plan in zip(packet.prompts, plan.prompts, strict=True):
        prompts.lint_prompt(ctx, prompt)
        hygiene.lint_prompt(ctx, prompt)
        contracts.lint_prompt(ctx, prompt)
        targets.lint_prompt(ctx, prompt, prompt_plan)
        settings.lint_prompt(ctx, prompt, prompt_plan)
        enforcement.lint_prompt(ctx, prompt, prompt_plan)
    prompts.lint_cycles(ctx)
    targets.lint_logins(ctx)
    # A finding may quote what is written (a command's argv): never an account's credential value.
    redact = Redactor.for_catalog(catalog)
    return LintReport(packet=packet.name, findings=[redact.model(f) for f in _unique(ctx.findings)])


def _unique(findings: list[Finding]) -> list[Finding]:
    """A manifest value resolved into every prompt is reported once, where it is written."""
    unique = {(f.kind, f.file, f.line, f.key, f.message): f for f in findings}
    return list(unique.values())
