"""`awp repair PACKET ID`: one repair Attempt by hand, with the unmet items and a note."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from awp_pipelines import api
from awp_pipelines.cli.common import (
    console,
    emit_json,
    json_option,
    out,
    packet_argument,
    providers_option,
    translator_option,
    user_errors,
)
from awp_pipelines.core.engine.interrupts import Interrupted


@click.command("repair")
@packet_argument
@click.argument("prompt_id", metavar="ID")
@click.option("--note", metavar="TEXT", help="Said to the agent in the repair prompt (short; redacted).")
@click.option("--packet-run", metavar="ID", help="Repair in this packet run (default: the prompt's latest).")
@click.option("--instance", "instance_dir", type=click.Path(path_type=Path, file_okay=False),
              envvar="AWP_DAGSTER_HOME", help="Dagster home the runs are stored in. Default: <packet>/.awp/dagster.")
@click.option("--no-commit", is_flag=True, help="Verify but do not commit the target repos.")
@providers_option
@translator_option
@json_option
@user_errors
def repair_command(packet: Path, prompt_id: str, note: str | None, packet_run: str | None,
                   instance_dir: Path | None, no_commit: bool, providers_file: Path | None, translator: str | None,
                   as_json: bool) -> None:
    """Start one repair Attempt of prompt ID by hand, in its latest packet run (or --packet-run): its prompt
    carries the unmet items of the last Attempt and the note. Nothing runs after it.

    Exits 0 when the repair completed the prompt, 1 when it did not, 2 for bad input.
    """
    try:
        result = api.repair(packet, prompt_id, note=note, packet_run=packet_run, instance=instance_dir,
                            commit=not no_commit, providers=providers_file, translator=translator)
    except Interrupted as stopped:
        console.print(f"awp repair: {stopped}: the repair Attempt is recorded as interrupted, its partial "
                      "work checkpointed", highlight=False, markup=False)
        sys.exit(128 + stopped.signum)
    record = result.record
    if as_json:
        emit_json({"packet": result.packet, "packet_run": result.packet_run, "prompt": result.prompt,
                   "attempt": record.identity.attempt_id, "mode": record.identity.mode, "result": record.result,
                   "state": result.state, "ok": result.ok})
    else:
        out.print(f"{result.prompt}: repair {record.identity.attempt_id} ended {record.result}; agent run "
                  f"{result.state}" + (f" ({result.reason})" if result.reason and not result.ok else ""), markup=False)
    sys.exit(0 if result.ok else 1)


def register(group: click.Group) -> None:
    group.add_command(repair_command)
