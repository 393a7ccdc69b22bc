"""`awp status`: what happened in a packet run — per prompt its state, every Attempt and the last verifier
report, and the totals — read from the Dagster instance the runs went to."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from rich.markup import escape

from awp_pipelines import api
from awp_pipelines.cli.common import (
    console,
    emit_json,
    json_option,
    out,
    providers_option,
    translator_option,
    user_errors,
)
from awp_pipelines.core.engine.status_report import AttemptSummary, StatusReport
from awp_pipelines.core.records.attempt_lifecycle import cause_shown
from awp_pipelines.core.records.plural import counted

_STYLE = {"completed": "green", "running": "cyan", "active": "cyan", "queued": "cyan", "waiting": "cyan",
          "planned": "dim", "not_started": "dim", "not_selected": "dim", "interrupted": "yellow",
          "stopped": "yellow", "blocked": "yellow", "cancelled": "yellow", "failed": "red", "budget_exhausted": "red"}


def instance_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--instance", "instance_dir", type=click.Path(path_type=Path, file_okay=False),
                        envvar="AWP_DAGSTER_HOME", help="Dagster home the runs are stored in (its dagster.yaml, "
                        "e.g. Postgres, is honoured). Default: $DAGSTER_HOME when it holds an instance, else "
                        "<packet>/.awp/dagster; the first line says which.")(func)


@click.command("status")
@click.argument("packet", type=click.Path(path_type=Path), default=".")
@click.option("--packet-run", metavar="ID", help="Show this packet run (default: the packet's newest).")
@instance_option
@providers_option
@translator_option
@json_option
@user_errors
def status_command(packet: Path, packet_run: str | None, instance_dir: Path | None, providers_file: Path | None,
                   translator: str | None, as_json: bool) -> None:
    """Show PACKET's newest packet run (default: the packet in the current folder): each prompt's state,
    every Attempt (mode, target, reason, result, duration, tokens, cost, Dagster run) and its last verifier
    report, then the totals. `--json` follows `awp schema status`."""
    from awp_pipelines.orchestration.ledger.instance import instance_to_read

    chosen = instance_to_read(api.load(packet).root, instance_dir)
    report = api.status(packet, packet_run=packet_run, instance=chosen.home, providers=providers_file,
                        translator=translator)
    (console if as_json else out).print(chosen.line(), highlight=False)  # JSON on stdout stays one document
    if as_json:
        emit_json(report)
    else:
        print_status(report, packet)


def print_status(report: StatusReport, packet: Path) -> None:
    """`packet`: the folder the user named; the resume hint names it resolved, so it works pasted anywhere."""
    if report.packet_run is None:
        out.print(f"{report.packet}: no packet run in this instance yet (`awp run` or the UI starts one)")
        return
    t = report.totals
    style = _STYLE[report.state]
    why = f" ({escape(report.reason)})" if report.reason else ""
    out.print(f"[bold]{report.packet}[/bold] · packet run {report.packet_run} · [{style}]{report.state}[/{style}]{why} "
              f"· {t.completed}/{t.prompts} prompts completed · {counted(t.attempts, 'Attempt')} in "
              f"{counted(t.runs, 'Dagster run')}")
    resume = f"awp resume {shlex.quote(str(packet.resolve()))} --packet-run {report.packet_run}"
    if report.stop is not None:
        out.print(f"  {escape(report.stop.reason or report.stop.by)} ({report.stop.by}, {report.stop.at}); "
                  f"resume: {escape(resume)}", highlight=False)
    elif report.state == "interrupted":
        out.print(f"  resume: {escape(resume)}", highlight=False)
    for prompt in report.prompts:
        style = _STYLE[prompt.state]
        reason = f" — {escape(prompt.reason)}" if prompt.reason else ""
        last = prompt.attempts[-1].failure_class if prompt.attempts else None
        cause = f" ({cause_shown(prompt.cause, last)})" if prompt.cause else ""
        if prompt.avoids:
            reason += escape(f" ({prompt.role}: never on {', '.join(prompt.avoids)}, its coders' accounts)")
        out.print(f"{prompt.prompt} {prompt.name}: [{style}]{prompt.state}[/{style}]{cause}{reason}", highlight=False)
        if prompt.superseded:
            out.print(f"  earlier AgentRun {escape(prompt.superseded_agent_run or '')}: [yellow]cancelled "
                      f"(superseded)[/yellow] — {escape(prompt.superseded.split(' — ', 1)[-1])}", highlight=False)
            out.print(f"  AgentRun {escape(prompt.agent_run or '')}: {prompt.state}", highlight=False)
        for attempt in prompt.attempts:
            out.print("  " + _attempt_line(attempt), highlight=False)
    cost = f" · ${t.cost_usd:.4f}" if t.cost_usd is not None else ""
    out.print(f"totals: {t.duration_s:.1f} s · {t.tokens_in:,} tokens in / {t.tokens_out:,} out{cost}")
    for handed in report.handoff:
        out.print(f"hand-off: {handed.line()} ({handed.at})", markup=False, highlight=False, soft_wrap=True)
    for prompt in report.prompts:
        if prompt.verifier is not None and not prompt.verifier.passed:
            out.print(f"[red]{prompt.prompt} unmet[/red] (last verifier report):")
            for item in prompt.verifier.failures + prompt.verifier.faults:
                detail = f" — {item.details[0]}" if item.details else ""
                out.print(f"  - {item.readable}{detail}", markup=False)


def _attempt_line(a: AttemptSummary) -> str:
    target = "/".join(part for part in (a.provider, a.account, a.model) if part)
    result = a.result + (f" ({a.failure_class})" if a.failure_class and a.failure_class != a.result else "") \
        + (" (adopted from its commit)" if a.adopted else "")
    style = "green" if a.result == "completed" else ("cyan" if a.result == "running" else "red")
    facts = [f"{a.duration_s:.1f} s" if a.duration_s is not None else "",
             f"{a.tokens_in:,}/{a.tokens_out:,} tokens" if a.tokens_in or a.tokens_out else "",
             f"${a.cost_usd:.4f}" if a.cost_usd is not None else "",
             f"Dagster run {a.dagster_run[:8]}" if a.dagster_run else "",
             f"progress: {escape(a.progress)}" if a.progress else ""]
    reason = f" — {escape(a.reason)}" if a.reason else ""
    return (f"#{a.number} {a.mode} on {escape(target)}: [{style}]{result}[/{style}] · "
            + " · ".join(f for f in facts if f) + reason)


def register(group: click.Group) -> None:
    group.add_command(status_command)
