"""`awp control steer|amend|relax|log`: a person steers a running AgentRun from another terminal (Prompt Runner's
`control`). The agent's own commands are `awp agent-control` (control_cmd.py)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
import yaml

from awp_pipelines import api
from awp_pipelines.cli.common import WholeSummaryGroup, console, emit_json, json_option, packet_argument, user_errors
from awp_pipelines.core.decisions.operator_control import OperatorError, read_log, target_folder

F = TypeVar("F", bound=Callable[..., Any])


@click.group("control", cls=WholeSummaryGroup)
def control_group() -> None:
    """Steer a running AgentRun from outside it: a message into the agent's session (steer), a requirement
    added to its contract (amend) or dropped (relax), and the log of what came of each."""


def _where(func: F) -> F:
    func = click.option("--packet-run", metavar="ID", help="The packet run (default: the one running the prompt, "
                        "else its newest).")(func)
    func = click.option("--state-dir", type=click.Path(path_type=Path, file_okay=False),
                        help="The run's state folder, if `awp run --state-dir` set one (default: <packet>/.awp).")(func)
    return click.option("--author", help="Who you are, for the record (default: $AWP_AUTHOR, else $USER).")(func)


def _refused(err: OperatorError) -> None:
    console.print(f"[red]error:[/red] {err}", markup=True, highlight=False)
    sys.exit(1)


@control_group.command("steer")
@packet_argument
@click.argument("words", nargs=-1, required=True)
@click.option("--prompt", metavar="ID", help="The prompt whose Attempt to steer (needed when several run).")
@_where
@json_option
@user_errors
def steer_command(packet: Path, words: tuple[str, ...], prompt: str | None, packet_run: str | None,
                  state_dir: Path | None, author: str | None, as_json: bool) -> None:
    """Send a message to the agent of the running Attempt: its session ends at its next event and resumes, the same
    provider session, with the message. The contract is unchanged; `recovery.max_steers` (default 3) bounds the
    steers of an AgentRun, and one past it is refused and logged."""
    try:
        request = api.steer(packet, " ".join(words), prompt=prompt, packet_run=packet_run, author=author,
                            state_dir=state_dir)
    except OperatorError as err:
        _refused(err)
        return
    if as_json:
        emit_json(request.model_dump())
    else:
        click.echo(f"steer {request.id} queued: the session takes it at its next event (`awp control log` says when)")


@control_group.command("amend")
@packet_argument
@click.argument("prompt")
@click.option("--add-file", "files", multiple=True, metavar="PATH", help="A file that must exist (files_exist).")
@click.option("--add", "added", multiple=True, metavar="CLAUSE=YAML",
              help="An entry for any clause, e.g. 'contains={path: README.md, text: Usage}'.")
@click.option("--reason", required=True, help="Why (mandatory).")
@_where
@json_option
@user_errors
def amend_command(packet: Path, prompt: str, files: tuple[str, ...], added: tuple[str, ...], reason: str,
                  packet_run: str | None, state_dir: Path | None, author: str | None, as_json: bool) -> None:
    """Add a requirement to the contract of PROMPT's AgentRun (the running one, else its newest). Run-local: the
    packet's file is kept; the AgentRun's next verify uses it, and its Attempt records it with its timing."""
    wanted: dict[str, list[object]] = {"files_exist": list(files)} if files else {}
    for item in added:
        clause, _, text = item.partition("=")
        wanted.setdefault(clause.strip(), []).append(yaml.safe_load(text))
    try:
        if not wanted:
            raise OperatorError("name what to add: --add-file PATH, or --add CLAUSE=YAML")
        made = [api.amend(packet, prompt, clause, entries, reason=reason, packet_run=packet_run, author=author,
                          state_dir=state_dir) for clause, entries in wanted.items()]
    except OperatorError as err:
        _refused(err)
        return
    _said(made, as_json)


@control_group.command("relax")
@packet_argument
@click.argument("prompt")
@click.option("--drop", "clause", required=True, metavar="CLAUSE", help="The contract clause to drop (contains, …).")
@click.option("--reason", required=True, help="Why (mandatory).")
@click.option("--confirm", is_flag=True, help="Yes: weaken the contract (refused without it).")
@_where
@json_option
@user_errors
def relax_command(packet: Path, prompt: str, clause: str, reason: str, confirm: bool, packet_run: str | None,
                  state_dir: Path | None, author: str | None, as_json: bool) -> None:
    """Drop a clause from the contract of PROMPT's AgentRun: the risky direction, so a verb of its own that needs
    --confirm; recorded with its timing (pre_verify, post_failure, post_success)."""
    try:
        made = [api.relax(packet, prompt, clause, reason=reason, confirm=confirm, packet_run=packet_run,
                          author=author, state_dir=state_dir)]
    except OperatorError as err:
        _refused(err)
        return
    _said(made, as_json)


def _said(made: list[Any], as_json: bool) -> None:
    if as_json:
        emit_json([m.model_dump() for m in made])
    for amendment in made if not as_json else ():
        click.echo(amendment.line())


@control_group.command("log")
@packet_argument
@click.argument("prompt", required=False)
@click.option("--packet-run", metavar="ID", help="The packet run (default: the running one, else the newest).")
@click.option("--state-dir", type=click.Path(path_type=Path, file_okay=False), help="The run's state folder.")
@json_option
@user_errors
def log_command(packet: Path, prompt: str | None, packet_run: str | None, state_dir: Path | None,
                as_json: bool) -> None:
    """Every control command of an AgentRun and what came of it (queued, applied, refused), with each verify."""
    loaded = api.load(packet)
    try:
        folder = target_folder(state_dir or loaded.root / ".awp", packet_run, prompt, live=False)
    except OperatorError as err:
        _refused(err)
        return
    entries = read_log(folder)
    if as_json:
        emit_json([e.model_dump() for e in entries])
        return
    for e in entries:
        who = f" by {e.author}" if e.author else ""
        on = f" on {e.attempt}" if e.attempt else ""
        click.echo(f"{e.at}  {e.outcome:<8} {e.command}{who}{on}: {e.detail}")


def register(group: click.Group) -> None:
    group.add_command(control_group)
