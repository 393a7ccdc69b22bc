"""What every command shares: clear one-line errors (exit 2), --json output, selection flags."""

from __future__ import annotations

import functools
import json
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, ParamSpec, TypeVar

import click
from pydantic import BaseModel
from rich.console import Console
from rich.markup import escape

from awp_pipelines import api
from awp_pipelines.core.packet.errors import PacketError, StorageUnavailable
from awp_pipelines.core.packet.ids import check_id
from awp_pipelines.core.packet.packet import Packet
from awp_pipelines.core.packet.providers_config import Catalog

F = TypeVar("F", bound=Callable[..., Any])
P = ParamSpec("P")
R = TypeVar("R")
EXIT_INPUT = 2

console = Console(stderr=True, highlight=False, soft_wrap=True)
out = Console(highlight=False, soft_wrap=True)


def summary(command: click.Command) -> str:
    """A command's one-line summary, whole: its short_help, else the first sentence of its help."""
    if command.short_help:
        return command.short_help
    paragraph = " ".join((command.help or "").split("\n\n")[0].split())
    end = paragraph.find(". ")
    return paragraph if end == -1 else paragraph[: end + 1]


class WholeSummaryGroup(click.Group):
    """Lists its commands with whole summaries, wrapped: click's default cuts each to one line with `...`."""

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, summary(command)) for name in self.list_commands(ctx)
                if (command := self.get_command(ctx, name)) is not None and not command.hidden]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def fail_input(err: PacketError) -> NoReturn:
    # One line whatever the terminal width (soft_wrap), and `[...]` in a message is text, not markup.
    console.print(f"[red]error:[/red] {escape(str(err))}", soft_wrap=True, highlight=False)
    sys.exit(EXIT_INPUT)


def user_errors(func: Callable[P, R]) -> Callable[P, R]:
    """Bad input ends in one line naming file, line and key, and exit code 2 — never a traceback. A failed
    instance database ends in one line and exit code 1."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except PacketError as err:
            fail_input(err)
        except Exception as err:
            said = str(err) if isinstance(err, StorageUnavailable) else _storage_failure(err)
            if said is None:
                raise
            console.print(f"[red]error:[/red] {escape(said)}", soft_wrap=True, highlight=False)
            sys.exit(1)

    return wrapper


def _storage_failure(err: Exception) -> str | None:
    from awp_pipelines.orchestration.ledger.instance import storage_failure  # Dagster only once something failed

    failure = storage_failure(err)
    return None if failure is None else f"the Dagster instance's database failed ({failure})"


def packet_run_id(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """Click callback for `--packet-run`: the id names a folder under .awp/, so `../..` is bad input (exit 2)."""
    if value is None:
        return None
    try:
        return check_id(value, "packet run id")
    except ValueError as err:
        raise click.BadParameter(str(err), ctx=ctx, param=param) from None


def packet_argument(func: F) -> F:
    return click.argument("packet", type=click.Path(path_type=Path))(func)


def providers_option(func: F) -> F:
    return click.option("--providers", "providers_file", type=click.Path(path_type=Path, dir_okay=False),
                        envvar="AWP_PROVIDERS",
                        help="providers.yaml to use (default: ./resources/providers.yaml, else built-ins).")(func)


def translator_option(func: F) -> F:
    return click.option("--translator", metavar="MODULE.CLASS", envvar="AWP_TRANSLATOR",
                        help="The PacketTranslator subclass the packet's assets are built with (its asset keys "
                        "and work-tree pools), as the code location's. Default: AWP's own.")(func)


def json_option(func: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON on stdout.")(func)


def selection_options(func: F) -> F:
    options = [
        click.argument("ids", nargs=-1),
        click.option("--from", "from_id", metavar="ID", help="Start at this prompt."),
        click.option("--through", "through_id", metavar="ID", help="Stop after this prompt."),
        click.option("--phase", metavar="PHASE", help="Only prompts of this phase."),
        click.option("--remaining", is_flag=True, help="Skip prompts already completed in this packet's state."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def override_options(func: F) -> F:
    """--provider/--model/--effort/--profile: the CLI layer, last in the precedence order."""
    options = [
        click.option("--provider", help="Use this provider for every prompt (e.g. simulated)."),
        click.option("--model", help="Use this model, or an alias from providers.yaml, for every prompt."),
        click.option("--effort", help="Use this reasoning effort for every prompt."),
        click.option("--profile", help="Layer this home profile instead of the manifest's `profile`."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def open_packet(path: Path) -> Packet:
    return api.load(path)


def open_catalog(file: Path | None) -> Catalog:
    return api.catalog(file)


def emit_json(payload: Any) -> None:
    if isinstance(payload, BaseModel):
        text = payload.model_dump_json(indent=2)
    else:
        text = json.dumps(payload, indent=2, default=str)
    click.echo(text)


def awp_command() -> str:
    """What the user types to run awp again: `awp` when that is this awp on PATH, else this install's script
    (`.venv/bin/awp` from the project root), so a printed hint works when pasted."""
    script = Path(sys.executable).parent / "awp"
    on_path = shutil.which("awp")
    if on_path and (not script.exists() or os.path.samefile(on_path, script)):
        return "awp"
    return shown_path(script) if script.exists() else "awp"


def shown_path(path: str | Path) -> str:
    """A path as the user would type it: relative to the current directory when below it, else absolute."""
    absolute = Path(path).absolute()
    try:
        return str(absolute.relative_to(Path.cwd()))
    except ValueError:
        return str(absolute)
