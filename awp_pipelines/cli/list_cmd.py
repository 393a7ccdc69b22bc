"""`awp list` (packets and their prompts, with each prompt's state in its newest packet run) and `awp init`
(the home config, as Prompt Runner's `init`), both with `--json`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from awp_pipelines.cli.common import awp_command, emit_json, json_option, out, shown_path, user_errors
from awp_pipelines.cli_features import authoring
from awp_pipelines.core.packet.errors import PacketError
from awp_pipelines.core.packet.packet import NATIVE_MANIFEST, PROMPT_RUNNER_MANIFEST, Packet, load_packet

_DEFAULT_INSTANCE = Path(".awp") / "dagster"


def _is_packet(folder: Path) -> bool:
    return (folder / NATIVE_MANIFEST).is_file() or (folder / PROMPT_RUNNER_MANIFEST).is_file()


def packets_under(path: Path) -> list[Path]:
    """PATH itself when it is a packet, else the packets directly in it (a project root's assets/ too)."""
    if _is_packet(path):
        return [path]
    folders = [path, path / "assets"]
    return [child for folder in folders if folder.is_dir() for child in sorted(folder.iterdir())
            if child.is_dir() and _is_packet(child)]


def _states(packet: Packet, with_status: bool) -> tuple[str | None, dict[str, str]]:
    """(newest packet run, prompt → state) from the packet's own instance; nothing when it has never run here
    (no instance is created to say so)."""
    if not with_status or not (packet.root / _DEFAULT_INSTANCE).is_dir():
        return None, {}
    from awp_pipelines import api

    report = api.status(packet)
    if not report.packet_run:
        return None, {}
    return report.packet_run, {p.prompt: p.state for p in report.prompts}


def packet_listing(packet: Packet, with_status: bool) -> dict[str, Any]:
    packet_run, states = _states(packet, with_status)
    prompts = [{"id": p.id, "name": p.name, "phase": p.front.phase, "depends_on": packet.dependencies(p),
                "state": states.get(p.id, "not_run" if packet_run else None)} for p in packet.prompts]
    completed = sum(1 for p in prompts if p["state"] == "completed")
    return {"packet": packet.name, "root": str(packet.root), "manifest": str(packet.manifest_file),
            "packet_run": packet_run, "completed": completed, "prompts": prompts}


@click.command("list")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.option("--no-status", is_flag=True, help="Do not read the packets' instances (faster: no states).")
@json_option
@user_errors
def list_command(paths: tuple[Path, ...], no_status: bool, as_json: bool) -> None:
    """List packets and their prompts in order, each with its state in the packet's newest packet run.

    PATH is a packet, or a folder holding packets (a project root: its assets/ too); default: the current
    folder. States come from <packet>/.awp/dagster; a packet that never ran there shows none.
    """
    found = [p for path in (paths or (Path.cwd(),)) for p in packets_under(path)]
    if not found:
        raise PacketError(paths[0] if paths else Path.cwd(), "no packet here",
                          hint=f"a packet folder holds {NATIVE_MANIFEST} or {PROMPT_RUNNER_MANIFEST}; create one "
                          f"with `{awp_command()} packet new NAME`")
    listings = [packet_listing(load_packet(folder), not no_status) for folder in found]
    if as_json:
        emit_json(listings)
        return
    for listing in listings:
        run = f" · packet run {listing['packet_run']}" if listing["packet_run"] else ""
        out.print(f"[bold]{listing['packet']}[/bold]  {shown_path(Path(listing['root']))}{run}", highlight=False)
        phase: object = None
        for prompt in listing["prompts"]:
            if prompt["phase"] is not None and prompt["phase"] != phase:
                phase = prompt["phase"]
                out.print(f"  phase {phase}", highlight=False, markup=False)
            state = f"  [{prompt['state']}]" if prompt["state"] else ""
            out.print(f"  {prompt['id']} {prompt['name']}{state}", highlight=False, markup=False)
        if listing["packet_run"]:
            out.print(f"  {listing['completed']}/{len(listing['prompts'])} completed", highlight=False)


@click.command("init")
@click.argument("folder", required=False, type=click.Path(file_okay=False))
@json_option
@user_errors
def init_command(folder: str | None, as_json: bool) -> None:
    """Set up the home config (AWP_CONFIG_HOME, default ~/.config/awp): config.md, the `simulated-default`
    profile and the templates folder with its `default` template; what exists is kept. With FOLDER, also create a
    packet there, as `awp packet new FOLDER` does."""
    made: dict[str, Any] = {k: str(v) for k, v in authoring.init_home().items()}
    if folder is not None:
        manifest = authoring.new_packet(authoring.packet_folder(folder, Path.cwd()))
        made["packet_manifest"] = str(manifest)
    if as_json:
        emit_json(made)
        return
    click.echo("AWP initialized")
    for key, value in made.items():
        click.echo(f"  {key.replace('_', ' ')}: {value}")
    if folder is not None:
        click.echo(f"next: {awp_command()} prompt new {shown_path(Path(made['packet_manifest']).parent)} SLUG")


def register(group: click.Group) -> None:
    group.add_command(list_command)
    group.add_command(init_command)
