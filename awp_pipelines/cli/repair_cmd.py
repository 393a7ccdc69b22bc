"""`awp repair PACKET ID`: one repair Attempt by hand, with the unmet items and a note."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from awp_pipelines.cli.common import (
    console,
    emit_json,
    json_option,
    open_catalog,
    open_packet,
    out,
    packet_argument,
    packet_lock,
    providers_option,
    user_errors,
)
from awp_pipelines.errors import PacketError
from awp_pipelines.interrupts import Interrupted, stopping
from awp_pipelines.packet import normalize_id
from awp_pipelines.plan import PlanContext


@click.command("repair")
@packet_argument
@click.argument("prompt_id", metavar="ID")
@click.option("--note", metavar="TEXT", help="Said to the agent in the repair prompt (short; redacted).")
@click.option("--packet-run", metavar="ID", help="Repair in this packet run (default: the prompt's latest).")
@click.option("--instance", "instance_dir", type=click.Path(path_type=Path, file_okay=False),
              envvar="AWP_DAGSTER_HOME", help="Dagster home the runs are stored in. Default: <packet>/.awp/dagster.")
@click.option("--no-commit", is_flag=True, help="Verify but do not commit the target repos.")
@providers_option
@json_option
@user_errors
def repair_command(packet: Path, prompt_id: str, note: str | None, packet_run: str | None,
                   instance_dir: Path | None, no_commit: bool, providers_file: Path | None, as_json: bool) -> None:
    """Start one repair Attempt of prompt ID by hand, in its latest packet run (or --packet-run): its prompt
    carries the unmet items of the last Attempt and the note. Nothing runs after it.

    Exits 0 when the repair completed the prompt, 1 when it did not, 2 for bad input.
    """
    from awp_pipelines.orchestration.assets import packet_assets
    from awp_pipelines.orchestration.instance import open_instance
    from awp_pipelines.orchestration.manual import agent_run_now, note_tags, plan_repair
    from awp_pipelines.orchestration.resources import AwpRuntime
    from awp_pipelines.orchestration.runner import RunOptions, execute_launch, recover_from_dead_runners
    from awp_pipelines.orchestration.state import agent_run_records

    loaded = open_packet(packet)
    pid = normalize_id(prompt_id)
    if all(p.id != pid for p in loaded.prompts):
        raise PacketError(loaded.root, f"no prompt {pid} in packet {loaded.name}",
                          hint="ids: " + ", ".join(p.id for p in loaded.prompts))
    catalog = open_catalog(providers_file)
    runtime = AwpRuntime(commit=not no_commit)
    compiled = packet_assets(loaded, catalog, runtime,
                             plan_context=PlanContext(catalog=catalog))
    # As `awp run`: one runner per packet, a dead runner's runs ended first, and a signal stops in order.
    with packet_lock(loaded, runtime.state_root(loaded.root)), stopping():
        instance = open_instance(loaded.root, instance_dir)
        try:
            recover_from_dead_runners(compiled, instance)
            run_id, launch = plan_repair(instance, compiled.binding, pid, packet_run, note)
            execute_launch(compiled, instance, run_id, launch, note_tags(note), RunOptions(run_id))
            record = agent_run_records(instance, loaded, run_id, pid)[-1]
            status = agent_run_now(instance, compiled.binding, run_id, pid)
        except Interrupted as stopped:
            console.print(f"awp repair: {stopped}: the repair Attempt is recorded as interrupted, its partial "
                          "work checkpointed", highlight=False, markup=False)
            sys.exit(128 + stopped.signum)
        finally:
            instance.dispose()
    ok = record.identity.number == launch.number and record.completed
    if as_json:
        emit_json({"packet": loaded.name, "packet_run": run_id, "prompt": pid, "attempt": record.identity.attempt_id,
                   "mode": record.identity.mode, "result": record.result, "state": status.state, "ok": ok})
    else:
        out.print(f"{pid}: repair {record.identity.attempt_id} ended {record.result}; agent run {status.state}"
                  + (f" ({status.reason})" if status.reason and not ok else ""), markup=False)
    sys.exit(0 if ok else 1)


def register(group: click.Group) -> None:
    group.add_command(repair_command)
