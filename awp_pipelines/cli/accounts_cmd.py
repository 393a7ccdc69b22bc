"""`awp accounts [PACKET]`: each account of providers.yaml with its state (ready, cooling_down after a limit,
auth_refused after a refused login), reason and until when, as the instance's store holds them (shared by
every process on the instance); `awp accounts lift NAME [PACKET]` ends a cooldown now."""

from __future__ import annotations

from pathlib import Path

import click
from rich.markup import escape

from awp_pipelines import api
from awp_pipelines.cli.common import EXIT_INPUT, console, emit_json, json_option, out, providers_option, user_errors
from awp_pipelines.cli.status_cmd import instance_option
from awp_pipelines.core.decisions.rotation import AccountView, account_view

_STYLE = {"ready": "green", "cooling_down": "yellow", "auth_refused": "red"}


@click.command("accounts")
@click.argument("args", nargs=-1, metavar="[PACKET] | lift NAME [PACKET]")
@instance_option
@providers_option
@json_option
@user_errors
def accounts_command(args: tuple[str, ...], instance_dir: Path | None, providers_file: Path | None,
                     as_json: bool) -> None:
    """List each account (of providers.yaml) with its state, cooldown reason and until when, from the
    instance PACKET's runs go to (default: the packet in the current folder). An auth refusal shows as
    `auth_refused`, not as a rest after a limit. `awp accounts lift NAME` ends NAME's cooldown now (after
    you logged it in, or its limit reset)."""
    if args[:1] == ("lift",):
        if len(args) not in (2, 3):
            raise click.UsageError("awp accounts lift NAME [PACKET]")
        _lift(args[1], Path(args[2] if len(args) == 3 else "."), instance_dir, providers_file, as_json)
        return
    if len(args) > 1:
        raise click.UsageError("awp accounts [PACKET] | awp accounts lift NAME [PACKET]")
    views, line = _views(Path(args[0] if args else "."), instance_dir, providers_file)
    (console if as_json else out).print(line, highlight=False)
    if as_json:
        emit_json({"accounts": [v.model_dump() for v in views]})
        return
    if not views:
        out.print("no accounts: providers.yaml declares none (`--providers FILE`)")
    for view in views:
        out.print(_line(view))


def _views(packet: Path, instance_dir: Path | None, providers_file: Path | None) -> tuple[list[AccountView], str]:
    from awp_pipelines.orchestration.ledger.factory import open_ledger
    from awp_pipelines.orchestration.ledger.instance import instance_to_read
    from awp_pipelines.orchestration.ledger.ledger import now_ms

    catalog = api.catalog(providers_file)
    chosen = instance_to_read(api.load(packet).root, instance_dir)
    with open_ledger(chosen.home) as (ledger, _):
        available = ledger.availability(catalog.accounts, now_ms())
    return [account_view(name, spec.provider, available) for name, spec in catalog.accounts.items()], chosen.line()


def _line(view: AccountView) -> str:
    style = _STYLE[view.state]
    head = f"{escape(view.account)} ({escape(view.provider)}): [{style}]{view.state}[/{style}]"
    if view.state == "ready":
        return head + f" · {view.attempts} attempt(s)"
    what = "its login was refused; log in, then `awp accounts lift " + view.account + "`" \
        if view.state == "auth_refused" else f"resting after {view.failure_class}"
    return head + f" until {view.until} ({view.remaining_s}s) · {escape(what)} · {escape(view.reason)}"


def _lift(name: str, packet: Path, instance_dir: Path | None, providers_file: Path | None, as_json: bool) -> None:
    from awp_pipelines.orchestration.ledger.factory import open_ledger
    from awp_pipelines.orchestration.ledger.instance import instance_to_read

    catalog = api.catalog(providers_file)
    chosen = instance_to_read(api.load(packet).root, instance_dir)
    with open_ledger(chosen.home) as (ledger, _):
        lifted = ledger.lift(name)
    if lifted is None and name not in catalog.accounts:
        console.print(f"awp accounts lift: no account '{escape(name)}' in providers.yaml and none stored; "
                      "`awp accounts` lists them")
        raise SystemExit(EXIT_INPUT)
    (console if as_json else out).print(chosen.line(), highlight=False)
    if as_json:
        emit_json({"account": name, "lifted": lifted.model_dump() if lifted else None})
    elif lifted is None:
        out.print(f"{escape(name)} has no cooldown: it is ready")
    else:
        out.print(f"{escape(name)}: lifted its {lifted.state} ({escape(lifted.failure_class)}); it is ready now")


def register(group: click.Group) -> None:
    group.add_command(accounts_command)
