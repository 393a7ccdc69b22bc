"""`awp resume [PACKET] [--packet-run ID]`: lift the user's stop of a packet run and go on with it."""

from __future__ import annotations

import time
from pathlib import Path

import click

from awp_pipelines.cli.common import open_packet, out, packet_run_id, providers_option, translator_option, user_errors
from awp_pipelines.cli.run_cmd import run_command
from awp_pipelines.cli.status_cmd import instance_option
from awp_pipelines.core.packet.errors import PacketError


@click.command("resume")
@click.argument("packet", type=click.Path(path_type=Path), default=".")
@click.option("--packet-run", metavar="ID", callback=packet_run_id, help="Resume this packet run (default: the "
              "packet's newest).")
@click.option("--lift-only", is_flag=True, help="Only lift the stop: the daemon's recovery sensor goes on with "
              "the packet run (under `dagster dev`); nothing runs in this process.")
@instance_option
@providers_option
@translator_option
@click.pass_context
@user_errors
def resume_command(ctx: click.Context, packet: Path, packet_run: str | None, lift_only: bool,
                   instance_dir: Path | None, providers_file: Path | None, translator: str | None) -> None:
    """Resume a packet run stopped by Ctrl-C, SIGTERM or a cancel in the UI: its stop is lifted and, unless
    --lift-only, it goes on in this process as `awp run PACKET --packet-run ID` does (completed prompts
    skipped, interrupted AgentRuns continued within their budgets)."""
    from awp_pipelines.orchestration.ledger.factory import open_ledger
    from awp_pipelines.orchestration.ledger.instance import instance_home
    from awp_pipelines.orchestration.views.status import newest_packet_run

    loaded = open_packet(packet)
    with open_ledger(instance_home(loaded.root, instance_dir)) as (ledger, _):
        packet_run = packet_run or newest_packet_run(ledger, loaded.name)
        if packet_run is None:
            raise PacketError(loaded.manifest_file, f"packet {loaded.name} has no packet run in this instance",
                              hint="`awp run` starts one")
        lifted = ledger.resume(packet_run, time.time()) if lift_only else ledger.stop_state(packet_run).marker
    was = f"it was {lifted.line()}" if lifted else "it had no stop"
    if lift_only:
        out.print(f"packet run {packet_run} resumed ({was}): the recovery sensor goes on with it", markup=False)
        return
    out.print(f"resuming packet run {packet_run} ({was})", markup=False)
    ctx.invoke(run_command, packet=packet, packet_run=packet_run, instance_dir=instance_dir,
               providers_file=providers_file, translator=translator)


def register(group: click.Group) -> None:
    group.add_command(resume_command)
