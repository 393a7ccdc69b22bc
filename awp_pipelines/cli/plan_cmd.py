"""`awp plan` (the fully resolved plan) and `awp schema` (JSON Schema of the on-disk models)."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.table import Table

from awp_pipelines.bounds import human_duration
from awp_pipelines.cli.common import (
    emit_json,
    json_option,
    open_catalog,
    open_packet,
    out,
    override_options,
    packet_argument,
    providers_option,
    selection_from,
    selection_options,
    user_errors,
)
from awp_pipelines.plan import Overrides, PacketPlan, PlanContext, build_plan
from awp_pipelines.schema import SCHEMAS, schema_for


@click.command("plan")
@packet_argument
@selection_options
@override_options
@providers_option
@json_option
@user_errors
def plan_command(packet: Path, ids: tuple[str, ...], from_id: str | None, through_id: str | None,
                 phase: str | None, remaining: bool, provider: str | None, model: str | None,
                 effort: str | None, profile: str | None, providers_file: Path | None, as_json: bool) -> None:
    """Print the fully resolved plan of PACKET: per prompt the provider, model, effort, accounts and
    fallback chain, the bounds derived from `timeout`, recovery budgets, verifier items, commit message,
    targets and cwd. Each value says which layer set it."""
    loaded = open_packet(packet)
    completed = frozenset()
    if remaining:
        from awp_pipelines.orchestration.state import completed_prompts

        completed = frozenset(completed_prompts(loaded))
    overrides = Overrides(provider=provider, model=model, effort=effort, profile=profile)
    ctx = PlanContext(catalog=open_catalog(providers_file), overrides=overrides)
    result = build_plan(loaded, ctx, selection_from(ids, from_id, through_id, phase, remaining, completed))
    if as_json:
        emit_json(result)
    else:
        print_plan(result)


def print_plan(plan: PacketPlan) -> None:
    out.print(f"[bold]{plan.packet}[/bold]  {plan.manifest}")
    for warning in plan.warnings:
        out.print(f"[yellow]warning:[/yellow] {warning}")
    if plan.budget is not None:
        out.print(f"budget of the packet run: {plan.budget.describe()}")
    table = Table(show_lines=True)
    for column in ("id", "prompt", "provider / model / effort", "bounds", "recovery", "verify", "commit · cwd"):
        table.add_column(column, overflow="fold")
    for p in plan.prompts:
        target = f"{p.provider} / {p.model} / {p.effort or '-'}"
        if p.accounts:
            target += f"\naccounts: {', '.join(p.accounts)}"
        if p.fallback:
            target += "\nfallback: " + " → ".join(f"{t.provider}/{t.model or '-'}" for t in p.fallback)
        target += "\n" + ", ".join(f"{k}←{v}" for k, v in p.sources.items())
        retry = p.recovery.retry
        recovery = (f"retry {retry.max_attempts}, repair {p.recovery.repair.max_attempts}, "
                    f"resume {p.recovery.resume_attempts}")
        if p.budget is not None:
            recovery += f"\nbudget {p.budget.describe()}"
        verify = "\n".join(i.label for i in p.verify_items) or "[yellow]none[/yellow]"
        table.add_row(p.id, f"{p.name}\nphase {p.phase or '-'}; after {', '.join(p.depends_on) or '-'}",
                      target, f"{human_duration(p.bounds.timeout_ms)} ({p.bounds.source})", recovery, verify,
                      f"{p.commit_message}\n{p.cwd}")
    out.print(table)


@click.command("schema")
@click.argument("model", required=False, type=click.Choice(sorted(SCHEMAS)), default="manifest")
def schema_command(model: str) -> None:
    """Print the JSON Schema of an on-disk model (manifest, prompt, providers, profile)."""
    click.echo(json.dumps(schema_for(model), indent=2))


def register(group: click.Group) -> None:
    group.add_command(plan_command)
    group.add_command(schema_command)
