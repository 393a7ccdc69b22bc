"""`awp agent-control continue|repeat|finish|blocked|progress`: run by the agent inside its session."""

from __future__ import annotations

import os
import sys

import click

from awp_pipelines.cli.common import WholeSummaryGroup, console
from awp_pipelines.core.decisions.agent_control import ControlError, make_request, record_progress


@click.group("agent-control", cls=WholeSummaryGroup)
def control_group() -> None:
    """Steer an agent-controlled iteration from inside the session (the session's environment carries the
    token and the request and progress files). The first request of an iteration wins."""


def _request(action: str, reason: str) -> None:
    try:
        path = make_request(os.environ, action, reason)
    except ControlError as err:
        console.print(f"[red]error:[/red] {err}", markup=True)
        sys.exit(1)
    click.echo(f"{action} requested ({path.name})")


def _action(action: str, needs_reason: bool, help_text: str) -> click.Command:
    @click.command(action, help=help_text)
    @click.option("--reason", default="", required=needs_reason, help="Why" + (" (required)." if needs_reason
                                                                                  else "."))
    def command(reason: str) -> None:
        _request(action, reason)

    return command


@control_group.command("progress")
@click.option("--summary", required=True, help="What is done so far.")
@click.option("--cursor", default="", help="Where the work stands (e.g. 3/10).")
@click.option("--unit", default="", help="What the cursor counts.")
def progress_command(summary: str, cursor: str, unit: str) -> None:
    """Record progress (replaces the previous record atomically; never ends the iteration)."""
    try:
        record_progress(os.environ, summary, cursor, unit)
    except ControlError as err:
        console.print(f"[red]error:[/red] {err}", markup=True)
        sys.exit(1)


for _name, _needs, _help in (("continue", False, "This prompt is done: go on."),
                             ("repeat", False, "Run another iteration of this prompt."),
                             ("finish", True, "Everything is done (accepted only if the completion contract passes)."),
                             ("blocked", True, "Stop: a person is needed; the AgentRun ends blocked.")):
    control_group.add_command(_action(_name, _needs, _help))


def register(group: click.Group) -> None:
    group.add_command(control_group)
