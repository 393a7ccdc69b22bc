"""`awp run` (in process, embedded Dagster instance) and `awp verify` (contracts only, no provider)."""

from __future__ import annotations

import shlex
import signal
import sys
from pathlib import Path

import click

from awp_pipelines import api
from awp_pipelines.cli.common import (
    console,
    emit_json,
    json_option,
    out,
    override_options,
    packet_argument,
    packet_run_id,
    providers_option,
    selection_options,
    translator_option,
    user_errors,
)
from awp_pipelines.cli.plan_cmd import print_plan
from awp_pipelines.core.engine.attempt_record import Usage
from awp_pipelines.core.engine.outage import quiet_outages
from awp_pipelines.core.engine.progress import AttemptEnded, LaunchDecided, LaunchWaiting, ProgressEvent, RunPlanned
from awp_pipelines.core.planning.plan import Overrides

_STYLE = {"completed": "green", "planned": "dim", "waiting": "yellow", "interrupted": "yellow", "stopped": "yellow",
          "blocked": "yellow", "cancelled": "yellow"}


@click.command("run")
@packet_argument
@selection_options
@override_options
@click.option("--dry-run", is_flag=True, help="Print the plan; run nothing.")
@click.option("--no-commit", is_flag=True, help="Verify but do not commit the target repos.")
@click.option("--verify-first", is_flag=True, help="Check each prompt's contract before its first Attempt: one "
              "already met completes with no agent session (Prompt Runner's pre-flight verify).")
@click.option("--packet-run", metavar="ID", callback=packet_run_id,
              help="Continue this packet run: completed prompts are skipped, interrupted AgentRuns go on within "
              "their budgets, Attempts count on from stored history (default: a new packet run).")
@click.option("--no-recovery", is_flag=True, help="One Attempt per prompt: no retry, fallback or repair.")
@click.option("--ignore-deps", is_flag=True, help="Run every selected prompt without waiting for its upstream, "
              "unwarned (prompts named by id, --from/--through or --phase run anyway, each unfinished upstream "
              "named in a warning; a resume or --remaining holds a prompt until its upstream completed).")
@click.option("--keep-going", is_flag=True, help="A prompt that ends unfinished does not stop the ones after it "
              "that do not depend on it (by depends_on; the order alone is none): they run, in order. The run still "
              "exits 1. A verifier fault stops it all the same.")
@click.option("--skip-preflight", is_flag=True, help="Do not check the agent CLIs on PATH, root refusals or logins "
              "before the run: each Attempt finds out for itself.")
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
@translator_option
@json_option
@user_errors
def run_command(packet: Path, ids: tuple[str, ...], from_id: str | None, through_id: str | None,
                phase: str | None, remaining: bool, provider: str | None, model: str | None,
                effort: str | None, profile: str | None, dry_run: bool, no_commit: bool, verify_first: bool,
                packet_run: str | None, no_recovery: bool, ignore_deps: bool, keep_going: bool, skip_preflight: bool,
                verbose: bool, parallel: int | None,
                instance_dir: Path | None, state_dir: Path | None, simulate_overlay: Path | None,
                providers_file: Path | None, translator: str | None, as_json: bool) -> None:
    """Run PACKET's selected prompts, one Attempt each, on a local Dagster instance: no server needed.

    Exits 0 when every selected prompt completed, 1 when one did not, 2 for bad input.
    """
    from awp_pipelines.orchestration.driver.in_process import RunStopped

    select = api.Select(ids, from_id, through_id, phase, remaining, ignore_deps)
    overrides = Overrides(provider=provider, model=model, effort=effort, profile=profile)
    if dry_run:
        plan = api.plan(packet, select, overrides=overrides, providers=providers_file, instance=instance_dir,
                        packet_run=packet_run, preflight=True, translator=translator)
        emit_json(plan) if as_json else print_plan(plan)
        return
    printer = _Printer(quiet=as_json)
    try:
        # SIGINT and SIGTERM stop in order: the running Attempt is recorded, its partial work checkpointed. A
        # database outage prints one line as it begins and one as it ends (outage.py).
        with quiet_outages(lambda line: console.print(line, highlight=False, markup=False)):
            result = api.run(packet, select, overrides=overrides, providers=providers_file, instance=instance_dir,
                             packet_run=packet_run, recover=not no_recovery, commit=not no_commit,
                             state_dir=state_dir, simulate_overlay=simulate_overlay, verbose=verbose,
                             parallel=parallel, on_progress=printer.event, translator=translator,
                             verify_first=verify_first, keep_going=keep_going, skip_preflight=skip_preflight)
    except RunStopped as stopped:
        console.print(f"awp run: {stopped}", highlight=False, markup=False)
        sys.exit(stopped.exit_code)
    outcomes = result.outcomes
    if not outcomes and result.explanation:  # --remaining: nothing remains, the packet run is done
        console.print(f"awp run: {result.explanation}", highlight=False, markup=False)
        sys.exit(0)
    if as_json:
        emit_json({"packet": result.packet, "packet_run": result.packet_run, "ok": result.ok,
                   "usage": result.total_usage.model_dump(),
                   "prompts": [{**o.__dict__, "usage": result.usage[o.prompt].model_dump()} for o in outcomes],
                   **({"explanation": result.explanation} if result.explanation and not result.ok else {}),
                   **({"warnings": result.warnings} if result.warnings else {}),
                   **({"handoff": [h.model_dump() for h in result.handoff]} if result.handoff else {})})
    else:
        for o in outcomes:
            # The AgentRun's state heads the line, in the words of `awp status` and `awp watch`.
            style = _STYLE.get(o.state, "red")
            detail = f" — {o.message}" if o.message else ""
            if o.decision and o.decision not in o.message:
                detail += f" ({o.decision})"
            attempt = f" ({o.attempt})" if o.attempt else ""
            last = f"; last Attempt {o.result}" if o.result not in (o.state, "not_run", "blocked_by_dependency") else ""
            out.print(f"  {o.prompt} {o.name}: [{style}]{o.state}[/{style}]{attempt}{last}{detail}", highlight=False)
        finished = sum(o.completed for o in outcomes)
        out.print(f"{result.packet}: {finished}/{len(outcomes)} prompts done (packet run {result.packet_run})"
                  f" · {_usage_line(result.total_usage)}")
        if result.explanation and not result.ok:
            console.print(f"awp run: {result.explanation}", highlight=False, markup=False)
        for handed in result.handoff:  # a failed hand-off loses nothing: `awp handoff` tries again
            retry = (f" — retry: awp handoff {shlex.quote(str(packet))} --packet-run {result.packet_run}"
                     if handed.action == "failed" else "")
            out.print(f"hand-off: {handed.line()}{retry}", markup=False, highlight=False, soft_wrap=True)
    if result.stopped_by is not None:  # it came after the last Attempt: everything is stored
        console.print(f"awp run: stopped by {signal.Signals(result.stopped_by).name} after its last Attempt ended: "
                      f"packet run {result.packet_run} is stored whole", highlight=False, markup=False)
        sys.exit(128 + result.stopped_by)
    sys.exit(0 if result.ok else 1)


class _Printer:
    """Progress lines as Attempts start and end, and each recovery decision, headed by their prompt."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.names: dict[str, str] = {}  # the selected prompts, in order: id → name
        self.done: set[str] = set()  # prompts whose Attempt completed: the counter only ever goes up

    def event(self, event: ProgressEvent) -> None:
        if isinstance(event, RunPlanned):
            self.names = dict(event.prompts)
            for warning in event.warnings:  # before anything runs, on stderr (also in --json's "warnings")
                console.print(f"awp run: warning: {warning}", highlight=False, markup=False)
        elif self.quiet:
            return
        elif isinstance(event, LaunchDecided):
            console.print(f"{self._head(event.prompt)} → {event.mode}: {event.reason}", highlight=False, markup=False)
        elif isinstance(event, LaunchWaiting):
            console.print(f"{self._head(event.prompt)} → {event.wait()}", highlight=False, markup=False)
        else:
            if isinstance(event, AttemptEnded) and event.result == "completed":
                self.done.add(event.prompt)
            console.print(f"{self._head(event.prompt)}: {event.line()}", highlight=False, markup=False)

    def _head(self, prompt: str) -> str:
        """`[done/selected]`: prompts completed so far, not the prompt's position (a repair of 02 after 03 would
        read `[2/3]` after `[3/3]`, a counter going backwards)."""
        return f"[{len(self.done)}/{len(self.names)} done] {prompt} {self.names.get(prompt, '')}"


def _usage_line(usage: Usage) -> str:
    cost = "cost unknown" if usage.cost_usd is None else f"${usage.cost_usd:.4f} ({usage.cost_source})"
    return (f"tokens in {usage.input_tokens} (+{usage.cached_input_tokens} cached) / out {usage.output_tokens}"
            f" · {cost}")


@click.command("verify")
@packet_argument
@click.argument("ids", nargs=-1)
@providers_option
@json_option
@user_errors
def verify_command(packet: Path, ids: tuple[str, ...], providers_file: Path | None, as_json: bool) -> None:
    """Check the `verify:` contracts of PACKET's prompts (all, or the given ids) against the repos as they
    are now. No provider runs. Exits 0 when every contract passes, 1 when one fails, 3 on a verifier fault."""
    reports = api.verify(packet, ids, providers=providers_file)
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
