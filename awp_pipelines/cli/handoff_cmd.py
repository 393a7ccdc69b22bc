"""`awp handoff PACKET`: push the packet run's work and open or update its pull request, by hand (again)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from awp_pipelines import api
from awp_pipelines.cli.common import (
    emit_json,
    json_option,
    out,
    packet_argument,
    providers_option,
    translator_option,
    user_errors,
)


@click.command("handoff")
@packet_argument
@click.option("--packet-run", metavar="ID", help="Hand off this packet run (default: the newest).")
@click.option("--instance", "instance_dir", type=click.Path(path_type=Path, file_okay=False),
              envvar="AWP_DAGSTER_HOME", help="Dagster home the runs are stored in. Default: <packet>/.awp/dagster.")
@providers_option
@translator_option
@json_option
@user_errors
def handoff_command(packet: Path, packet_run: str | None, instance_dir: Path | None, providers_file: Path | None,
                    translator: str | None, as_json: bool) -> None:
    """Push each `handoff:` repo's work to its head branch and open its pull request (GitHub) or merge request
    (GitLab), or update the open one, for the newest packet run (or --packet-run), whatever its state: the way
    to retry a hand-off that failed at the end of `awp run`. `awp status` shows the result.

    Exits 0 when every repo was handed off, 1 when one failed, 2 for bad input.
    """
    chosen, results = api.handoff(packet, packet_run=packet_run, instance=instance_dir, providers=providers_file,
                                  translator=translator)
    if as_json:
        emit_json({"packet_run": chosen, "handoff": [r.model_dump() for r in results]})
    else:
        for result in results:
            out.print(result.line(), markup=False, highlight=False, soft_wrap=True)
    sys.exit(0 if results and all(r.ok for r in results) else 1)


def register(group: click.Group) -> None:
    group.add_command(handoff_command)
