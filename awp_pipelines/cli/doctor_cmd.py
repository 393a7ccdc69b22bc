"""`awp doctor [PACKET]`: CLIs, credentials, config dirs and storage, each problem with its fix."""

from __future__ import annotations

import sys
from dataclasses import asdict
from pathlib import Path

import click
from rich.table import Table

from awp_pipelines.cli.common import (
    emit_json,
    json_option,
    open_catalog,
    open_packet,
    out,
    providers_option,
    user_errors,
)
from awp_pipelines.core.packet.providers_config import Catalog
from awp_pipelines.core.planning.plan import PlanContext, build_plan
from awp_pipelines.core.planning.provider_checks import Check, Need, cooldown_checks, diagnose, plan_needs

_STYLE = {"ok": "green", "warning": "yellow", "blocking": "red"}


def _needs(packet: Path | None, catalog: Catalog) -> list[Need]:
    if packet is None:
        return [Need(name, tuple(a for a, s in catalog.accounts.items() if s.provider == name), required=False)
                for name in catalog.providers]
    return plan_needs(build_plan(open_packet(packet), PlanContext(catalog=catalog)).prompts, catalog)


def _storage(packet: Path | None, instance_dir: Path | None, needs: list[Need]) -> list[Check]:
    """Storage reachable, and the cooldowns it holds for the accounts the packet may use."""
    from awp_pipelines.orchestration.ledger.factory import open_ledger
    from awp_pipelines.orchestration.ledger.instance import instance_home
    from awp_pipelines.orchestration.ledger.ledger import now_ms

    where = instance_dir or (packet.resolve() if packet else Path.cwd())
    home = instance_home(where, instance_dir)
    if not (home / "dagster.yaml").exists():  # nothing stored yet, and doctor creates nothing
        return [Check("dagster", "storage", "ok", f"no instance yet in {home}; the first awp run creates an "
                      "embedded one")]
    try:
        with open_ledger(home) as (ledger, _):
            accounts = {a for need in needs for a in need.accounts}
            cooldowns = ledger.availability(accounts, now_ms()).cooldowns
    except Exception as err:  # any storage error is the finding itself
        return [Check("dagster", "storage", "blocking", f"{type(err).__name__}: {str(err).splitlines()[0][:200]}",
                      "check dagster.yaml in the instance folder (e.g. the Postgres server and credentials)")]
    return [Check("dagster", "storage", "ok", "instance storage reachable"),
            *cooldown_checks(needs, cooldowns, now_ms())]


@click.command("doctor")
@click.argument("packet", required=False, type=click.Path(path_type=Path))
@click.option("--instance", "instance_dir", type=click.Path(path_type=Path, file_okay=False),
              envvar="AWP_DAGSTER_HOME", help="Dagster home whose storage to check (default: the packet's).")
@click.option("--online", is_flag=True,
              help="Also GET each HTTP provider's models list with each account's key: reachable, key accepted.")
@providers_option
@json_option
@user_errors
def doctor_command(packet: Path | None, instance_dir: Path | None, providers_file: Path | None, online: bool,
                   as_json: bool) -> None:
    """Check that this machine can run PACKET's agents (or every configured provider without PACKET):
    CLIs found with their versions, credentials present (never printed), config dirs writable, storage
    reachable, accounts resting after a rate limit; with --online, HTTP endpoints answering. Exits 1 when
    a problem blocks the packet, else 0; warnings do not block (a broken fallback, one resting account)."""
    catalog = open_catalog(providers_file)
    needs = _needs(packet, catalog)
    checks = diagnose(catalog, needs, online=online) + _storage(packet, instance_dir, needs)
    blocking = [c for c in checks if c.status == "blocking"]
    if as_json:
        emit_json({"ok": not blocking, "checks": [asdict(c) for c in checks]})
    else:
        table = Table()
        for column in ("", "subject", "check", "detail", "fix"):
            table.add_column(column, overflow="fold")
        for c in checks:
            style = _STYLE[c.status]
            table.add_row(f"[{style}]{c.status}[/{style}]", c.subject, c.what, c.detail, c.fix)
        out.print(table)
        out.print(f"{len(blocking)} blocking problem(s)" if blocking else "ready")
    sys.exit(1 if blocking else 0)


def register(group: click.Group) -> None:
    group.add_command(doctor_command)
