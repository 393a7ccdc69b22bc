"""`awp plan` (the fully resolved plan) and `awp schema` (JSON Schema of the on-disk models)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import click
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from awp_pipelines import api
from awp_pipelines.cli.common import (
    emit_json,
    json_option,
    out,
    override_options,
    packet_argument,
    providers_option,
    selection_options,
    shown_path,
    user_errors,
)
from awp_pipelines.cli_features.schema import SCHEMAS, schema_for
from awp_pipelines.core.packet.agents import target_refusal
from awp_pipelines.core.packet.model.recovery import ClassAttempts
from awp_pipelines.core.planning.catalog_plan import CatalogEntryPlan
from awp_pipelines.core.planning.plan import Overrides, PacketPlan, PromptPlan


@click.command("plan", short_help="Print the fully resolved plan of PACKET and which layer set each value.")
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
    result = api.plan(packet, api.Select(ids, from_id, through_id, phase, remaining),
                      overrides=Overrides(provider=provider, model=model, effort=effort, profile=profile),
                      providers=providers_file)
    if as_json:
        emit_json(result)
    else:
        print_plan(result)


def print_plan(plan: PacketPlan) -> None:
    """One block per prompt, a label and its value per line, so the plan reads at 80 columns (a table of
    seven columns folded every cell mid-word). Text objects: a `[...]` in a value is text, not markup."""
    out.print(Text(plan.packet, style="bold"))
    out.print(Text(shown_path(plan.manifest), style="dim"), soft_wrap=False)
    for warning in plan.warnings:
        out.print(Text.assemble(("warning: ", "yellow"), warning), soft_wrap=False)
    if plan.budget is not None:
        out.print(Text(f"budget of the packet run: {plan.budget.describe()}"), soft_wrap=False)
    out.print(Text(dirty_tree_line(plan.dirty_tree), style="dim"), soft_wrap=False)
    for prompt in plan.prompts:
        out.print()
        out.print(Text.assemble((f"{prompt.id}  {prompt.name}", "bold")), soft_wrap=False)
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="dim", no_wrap=True)
        grid.add_column(overflow="fold")  # words wrap whole; only a word wider than the column folds
        for label, value in plan_rows(prompt):
            grid.add_row(label, value)
        out.print(Padding(grid, (0, 0, 0, 4)))
    if plan.handoff:
        out.print()
    for repo, handoff in plan.handoff.items():  # when the packet run ends: after its prompts
        out.print(Text(f"hand-off of {repo}: {handoff.describe(plan.packet)}"), soft_wrap=False)
    print_catalog(plan.catalog)


def dirty_tree_line(policy: str) -> str:
    """What an Attempt will do with a person's uncommitted changes, said as a plan (not as an error)."""
    if policy == "refuse":
        return ("a work tree with uncommitted changes is left untouched: its Attempt ends before the agent starts "
                "and names the files to commit or stash (dirty_tree: refuse; `set_aside` stashes them)")
    return "uncommitted changes in a work tree are set aside as a git stash before an Attempt (dirty_tree: set_aside)"


def print_catalog(entries: list[CatalogEntryPlan]) -> None:
    """Each provider and account the prompts use: its fields, each with the layer that set it."""
    for entry in entries:
        out.print()
        out.print(Text(f"{entry.section.removesuffix('s')} {entry.name}", style="bold"), soft_wrap=False)
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="dim", no_wrap=True)
        grid.add_column(overflow="fold")
        grid.add_column(style="dim", overflow="fold")
        for key, setting in entry.fields.items():
            grid.add_row(key, Text(_shown(setting.value)), Text(setting.set_by))
        out.print(Padding(grid, (0, 0, 0, 4)))


def _shown(value: object) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in value.items())
    return ", ".join(map(str, value)) if isinstance(value, list) else str(value)


def class_budgets(attempts: ClassAttempts) -> str:
    """Each failure class's retry budget, as the decision counts it (policy._class_budget): `rate limit 5, ...`."""
    return ", ".join(f"{name.removeprefix('provider_').replace('_', ' ')} {getattr(attempts, name)}"
                     for name in type(attempts).model_fields)


def agent_applied(p: PromptPlan) -> str:
    """What the prompt's agent definition imposes, as applied: where it may run (and which targets of the chain
    that leaves out), and the permission mode, tools and isolation it set."""
    parts = [f"only providers {', '.join(p.agent_providers)}" if p.agent_providers else "",
             f"only models {', '.join(p.agent_models)}" if p.agent_models else ""]
    by_agent = {key for key, layer in p.sources.items() if layer.startswith("agent ")}
    parts += [f"permission {p.permission_mode}" if "permission_mode" in by_agent else "",
              f"tools {', '.join(p.allowed_tools) or 'none'}" if "allowed_tools" in by_agent else "",
              f"isolation {p.isolation}" if "isolation" in by_agent else ""]
    targets = [(p.provider, p.model), *((t.provider, t.model) for t in p.fallback)]
    skipped = [f"{provider}/{model or 'default'}" for provider, model in targets
               if target_refusal(tuple(p.agent_providers), tuple(p.agent_models), provider, model)]
    if skipped:
        parts.append(f"never on {', '.join(skipped)}"
                     + (" — no target left: a policy denial" if len(skipped) == len(targets) else ""))
    shown = "; ".join(x for x in parts if x)
    return f": {shown}" if shown else ""


def plan_rows(p: PromptPlan) -> list[tuple[str, Text]]:
    """The labelled values of one prompt's plan, in reading order; empty values are left out."""
    retry = p.recovery.retry
    rows = [
        ("phase", f"{p.phase or '-'}, after {', '.join(p.depends_on) or '-'}"),
        ("agent", f"{p.agent}" + (f" (role {p.role})" if p.role and p.role != p.agent else "") + agent_applied(p)
                  + (f"; independent of {', '.join(p.independent_of)}: never on a provider and account they used"
                     if p.independent_of else "")),
        ("target", f"{p.provider} / {p.model} / {p.effort or '-'}"),
        ("accounts", ", ".join(p.accounts)),
        ("fallback", " → ".join(f"{t.provider}/{t.model or '-'}" for t in p.fallback)),
        ("set by", ", ".join(f"{key}←{layer}" for key, layer in p.sources.items())),
        ("bounds", p.bounds.describe()),
        ("recovery", f"retries per class: {class_budgets(retry.class_attempts)}; "
                     f"repair {p.recovery.repair.max_attempts}, resume {p.recovery.resume_attempts}"),
        ("budget", p.budget.describe() if p.budget is not None else ""),
        ("confirm", f"cli_confirmation {p.cli_confirmation}: the model reported must be {p.model}"
                    if p.cli_confirmation in ("warn", "require") else ""),
        ("verify", "\n".join(i.label for i in p.verify_items) or "none"),
        ("commit", p.commit_message),
        ("cwd", shown_path(p.cwd)),
        ("argv", shlex.join(p.argv) if p.argv else ""),
    ]
    return [(label, Text(value)) for label, value in rows if value]


@click.command("schema")
@click.argument("model", required=False, type=click.Choice(sorted(SCHEMAS)), default="manifest")
def schema_command(model: str) -> None:
    """Print the JSON Schema of an on-disk model (manifest, prompt, providers, profile) or of a command's
    --json output (status)."""
    click.echo(json.dumps(schema_for(model), indent=2))


def register(group: click.Group) -> None:
    group.add_command(plan_command)
    group.add_command(schema_command)
