"""`awp run` (in process, embedded Dagster instance) and `awp verify` (contracts only, no provider)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from awp_pipelines.attempts import Usage, total_usage
from awp_pipelines.catalog import Catalog, default_catalog_file
from awp_pipelines.cli.common import (
    console,
    emit_json,
    json_option,
    open_catalog,
    open_packet,
    out,
    override_options,
    packet_argument,
    packet_lock,
    packet_run_id,
    providers_option,
    selection_from,
    selection_options,
    user_errors,
)
from awp_pipelines.cli.plan_cmd import print_plan
from awp_pipelines.errors import PacketError
from awp_pipelines.interrupts import stopping
from awp_pipelines.launches import Launch
from awp_pipelines.lint import refuse_secrets
from awp_pipelines.plan import Overrides, PlanContext, PromptPlan, build_plan
from awp_pipelines.redact import Redactor
from awp_pipelines.verifiers.context import VerifyContext
from awp_pipelines.verifiers.engine import run_contract

if TYPE_CHECKING:
    from dagster import DagsterInstance

    from awp_pipelines.packet import Packet

_STYLE = {"completed": "green", "verification_failed": "yellow", "blocked_by_dependency": "dim"}


@click.command("run")
@packet_argument
@selection_options
@override_options
@click.option("--dry-run", is_flag=True, help="Print the plan; run nothing.")
@click.option("--no-commit", is_flag=True, help="Verify but do not commit the target repos.")
@click.option("--packet-run", metavar="ID", callback=packet_run_id,
              help="Continue this packet run: completed prompts are skipped, interrupted AgentRuns go on within "
              "their budgets, Attempts count on from stored history (default: a new packet run).")
@click.option("--no-recovery", is_flag=True, help="One Attempt per prompt: no retry, fallback or repair.")
@click.option("-v", "--verbose", is_flag=True, help="Also print Dagster's own event log.")
@click.option("--parallel", type=click.IntRange(min=1), default=None, metavar="N",
              help="Run up to N prompts at once: those with no dependency path between them, on disjoint work "
              "trees, one Attempt per account (default 8, as under the daemon; 1: one prompt at a time).")
@click.option("--instance", "instance_dir", type=click.Path(path_type=Path, file_okay=False),
              envvar="AWP_DAGSTER_HOME", help="Dagster home to store runs in (a dagster.yaml there, e.g. "
              "Postgres, is honoured). Default: <packet>/.awp/dagster (SQLite).")
@click.option("--state-dir", type=click.Path(path_type=Path, file_okay=False),
              help="Where JSONL events go. Default: <packet>/.awp.")
@click.option("--simulate-overlay", type=click.Path(path_type=Path, dir_okay=False, exists=True),
              help="YAML {prompt id: simulate block} replacing the prompts' own (for tests and demos).")
@providers_option
@json_option
@user_errors
def run_command(packet: Path, ids: tuple[str, ...], from_id: str | None, through_id: str | None,
                phase: str | None, remaining: bool, provider: str | None, model: str | None,
                effort: str | None, profile: str | None, dry_run: bool, no_commit: bool,
                packet_run: str | None, no_recovery: bool, verbose: bool, parallel: int | None,
                instance_dir: Path | None, state_dir: Path | None, simulate_overlay: Path | None,
                providers_file: Path | None, as_json: bool) -> None:
    """Run PACKET's selected prompts, one Attempt each, on a local Dagster instance: no server needed.

    Exits 0 when every selected prompt completed, 1 when one did not, 2 for bad input.
    """
    from awp_pipelines.orchestration.assets import packet_assets
    from awp_pipelines.orchestration.instance import open_instance
    from awp_pipelines.orchestration.parallel import DEFAULT_PARALLEL, JobSource
    from awp_pipelines.orchestration.resources import AwpRuntime
    from awp_pipelines.orchestration.runner import Progress, RunOptions, RunStopped, run_packet
    from awp_pipelines.orchestration.state import completed_prompts

    loaded = open_packet(packet)
    catalog = open_catalog(providers_file)
    context = PlanContext(catalog=catalog, overrides=Overrides(provider=provider, model=model, effort=effort,
                                                               profile=profile))
    completed = frozenset(completed_prompts(loaded, instance_dir)) if remaining else frozenset()
    selection = selection_from(ids, from_id, through_id, phase, remaining, completed)
    plan = build_plan(loaded, context, selection)
    _refuse_unknown_providers(plan.prompts, catalog, loaded.manifest_file, executables=not dry_run)
    refuse_secrets(loaded)  # a credential in a prompt would reach the agent, the UI and the git history
    if dry_run:
        emit_json(plan) if as_json else print_plan(plan)
        return
    runtime = AwpRuntime(state_dir=str(state_dir) if state_dir else None, commit=not no_commit,
                         simulate_overlay=str(simulate_overlay.resolve()) if simulate_overlay else None)
    width = parallel or DEFAULT_PARALLEL
    compiled = packet_assets(loaded, catalog, runtime, plan_context=context, parallel=width)
    # What a step process of a parallel run needs to build this same job again (it is spawned).
    catalog_file = providers_file or default_catalog_file()
    source = JobSource(str(loaded.root), str(catalog_file.resolve()) if catalog_file else None,
                       {"provider": provider, "model": model, "effort": effort, "profile": profile},
                       runtime.model_dump(), width) if width > 1 else None
    selected = [p.id for p in plan.prompts]
    names = {p.id: p.name for p in plan.prompts}
    printer = _Printer(selected, names, quiet=as_json)
    # SIGINT and SIGTERM stop in order: the running Attempt is recorded, its partial work checkpointed.
    with packet_lock(loaded, runtime.state_root(loaded.root)), stopping() as stop:
        instance = open_instance(loaded.root, instance_dir)
        try:
            options = RunOptions(packet_run, recover=not no_recovery, verbose=verbose, parallel=source)
            ran, outcomes = run_packet(compiled, instance, selected, options,
                                       Progress(attempt=printer.attempt, launch=printer.launch))
            usages = {o.prompt: _agent_run_usage(instance, loaded, ran, o.prompt) for o in outcomes}
        except RunStopped as stopped:
            console.print(f"awp run: {stopped}", highlight=False, markup=False)
            sys.exit(stopped.exit_code)
        finally:
            instance.dispose()
    ok = bool(outcomes) and all(o.completed for o in outcomes)
    packet_usage = total_usage(usages.values())
    if as_json:
        emit_json({"packet": loaded.name, "packet_run": ran, "ok": ok, "usage": packet_usage.model_dump(),
                   "prompts": [{**o.__dict__, "usage": usages[o.prompt].model_dump()} for o in outcomes]})
    else:
        for o in outcomes:
            style = _STYLE.get(o.result, "red")
            detail = f" — {o.message}" if o.message else ""
            if o.decision:
                detail += f" ({o.decision})"
            attempt = f" ({o.attempt})" if o.attempt else ""
            state = f"; agent run {o.state}" if o.state and o.state != o.result else ""
            out.print(f"  {o.prompt} {o.name}: [{style}]{o.result}[/{style}]{attempt}{state}{detail}",
                      highlight=False)
        finished = sum(o.completed for o in outcomes)
        out.print(f"{loaded.name}: {finished}/{len(selected)} prompts completed (packet run {ran})"
                  f" · {_usage_line(packet_usage)}")
    if stop.signum is not None:  # it came after the last Attempt: everything is stored
        console.print(f"awp run: {RunStopped(ran, stop.signum)}", highlight=False, markup=False)
        sys.exit(128 + stop.signum)
    sys.exit(0 if ok else 1)


class _Printer:
    """Progress lines as Attempts start and end, and each recovery decision."""

    def __init__(self, selected: list[str], names: dict[str, str], quiet: bool) -> None:
        self.selected, self.names, self.quiet = selected, names, quiet

    def _head(self, prompt: str) -> str:
        index = self.selected.index(prompt) + 1 if prompt in self.selected else "?"
        return f"[{index}/{len(self.selected)}] {prompt} {self.names.get(prompt, '')}"

    def attempt(self, line: str) -> None:
        """`Attempt <packet run>.<prompt>.a<n> …` from the compute, headed by its prompt."""
        if self.quiet:
            return
        attempt = line.split(" ", 2)[1] if line.count(" ") >= 2 else ""
        agent_run = attempt.rsplit(".a", 1)[0]
        prompt = next((p for p in self.selected if agent_run.endswith(f".{p}")), None)
        head = f"{self._head(prompt)}: " if prompt else ""
        console.print(f"{head}{line}", highlight=False, markup=False)

    def launch(self, launch: Launch) -> None:
        if not self.quiet:
            console.print(f"{self._head(launch.prompt)} → {launch.mode}: {launch.reason}", highlight=False,
                          markup=False)


def _agent_run_usage(instance: DagsterInstance, packet: Packet, packet_run: str, prompt: str) -> Usage:
    """Telemetry summed over every Attempt of the prompt's AgentRun, read from the stored records."""
    from awp_pipelines.orchestration.state import agent_run_records

    return total_usage(r.usage for r in agent_run_records(instance, packet, packet_run, prompt))


def _usage_line(usage: Usage) -> str:
    cost = "cost unknown" if usage.cost_usd is None else f"${usage.cost_usd:.4f} ({usage.cost_source})"
    return (f"tokens in {usage.input_tokens} (+{usage.cached_input_tokens} cached) / out {usage.output_tokens}"
            f" · {cost}")


def _refuse_unknown_providers(prompts: list[PromptPlan], catalog: Catalog, file: Path,
                              executables: bool = True) -> None:
    """Refuse before any run starts, not halfway through the packet."""
    import shutil

    from awp_pipelines.doctor import executable_of, install_fix
    from awp_pipelines.providers.registry import CLI_ADAPTERS, adapter_for

    for p in prompts:
        if p.provider not in catalog.providers:
            raise PacketError(file, f"prompt {p.id} uses unknown provider '{p.provider}'", key="provider",
                              hint=f"known providers: {', '.join(catalog.providers)}; or pass --provider")
        spec = catalog.providers[p.provider]
        try:
            adapter_for(spec)
        except PacketError as err:
            raise PacketError(file, f"prompt {p.id}: {err.message}", key="provider", hint=err.hint) from None
        # A `probe: true` primary with a fallback is checked when chosen, and passed over if it is missing.
        probed = p.probe and bool(p.fallback)
        executable = executable_of(spec) if executables and spec.kind in CLI_ADAPTERS and not probed else None
        if executable and shutil.which(executable) is None:
            # A missing agent CLI would fail every Attempt as launch_failed: say so before any run starts.
            raise PacketError(file, f"prompt {p.id}: provider '{p.provider}' ({spec.kind}) runs {executable}, "
                              "which is not on PATH", key="provider",
                              hint=f"{install_fix(p.provider, spec, executable)}; `awp doctor` checks the rest")


@click.command("verify")
@packet_argument
@click.argument("ids", nargs=-1)
@json_option
@user_errors
def verify_command(packet: Path, ids: tuple[str, ...], as_json: bool) -> None:
    """Check the `verify:` contracts of PACKET's prompts (all, or the given ids) against the repos as they
    are now. No provider runs. Exits 0 when every contract passes, 1 when one fails, 3 on a verifier fault."""
    loaded = open_packet(packet)
    prompts = selection_from(ids, None, None, None, False).apply(loaded)
    repos = {n: r.path for n, r in loaded.repos.items()}
    reports = []
    redactor = Redactor.for_catalog(open_catalog(None))  # a verifier prints what it sees: an echoed key
    for prompt in prompts:
        if prompt.front.verify is None or prompt.front.verify.is_empty():
            continue
        ctx = VerifyContext(loaded.root, repos, loaded.default_repo, prompt.id)
        reports.append(redactor.model(run_contract(prompt.front.verify, ctx)))
    if as_json:
        emit_json([r.model_dump(mode="json") for r in reports])
    else:
        for report in reports:
            mark = "[green]pass[/green]" if report.passed else "[red]FAIL[/red]"
            out.print(f"{report.prompt_id}: {mark}")
            if not report.passed:
                out.print(report.unmet_text(), markup=False)
    if any(r.faults for r in reports):
        sys.exit(3)
    sys.exit(0 if all(r.passed for r in reports) else 1)


def register(group: click.Group) -> None:
    group.add_command(run_command)
    group.add_command(verify_command)
