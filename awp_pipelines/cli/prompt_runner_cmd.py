"""Prompt Runner's `capabilities`, `template list` and `repo add`, each with `--json`."""

from __future__ import annotations

from pathlib import Path

import click

from awp_pipelines.cli.authoring_cmd import subgroup
from awp_pipelines.cli.common import emit_json, json_option, shown_path, user_errors
from awp_pipelines.cli_features import capabilities as capability_list
from awp_pipelines.cli_features.authoring import DEFAULT_TEMPLATE
from awp_pipelines.cli_features.repo_add import add_repo
from awp_pipelines.core.packet.packet import find_manifest
from awp_pipelines.core.packet.templates import list_templates


@click.command("capabilities")
@json_option
def capabilities_command(as_json: bool) -> None:
    """What this installation can do, one name a line (Prompt Runner's where AWP has them, then AWP's own):
    for scripts, instead of parsing --help. --json adds the schema and the version."""
    if as_json:
        emit_json(capability_list.document())
    else:
        for name in capability_list.capabilities():
            click.echo(name)


@click.command("list")
@click.argument("packet", required=False, type=click.Path(path_type=Path, file_okay=False))
@json_option
@user_errors
def template_list(packet: Path | None, as_json: bool) -> None:
    """The templates `awp prompt new --template NAME` can start from: the built-in one, the home folder's, and
    PACKET's own templates/ (a later one of a name replaces an earlier). One a line: name, source, where."""
    root = find_manifest(packet).parent if packet is not None else None
    entries = list_templates(root, builtins=(DEFAULT_TEMPLATE,))
    if as_json:
        emit_json([{"name": e.name, "source": e.source, "path": str(e.path) if e.path else None} for e in entries])
        return
    for entry in entries:
        click.echo(f"{entry.name}\t{entry.source}\t{shown_path(entry.path) if entry.path else 'builtin'}")


@click.command("add")
@click.argument("name")
@click.argument("path")
@click.option("--packet", type=click.Path(path_type=Path, file_okay=False), default=Path("."), show_default=True,
              help="The packet folder.")
@click.option("--default", "make_default", is_flag=True,
              help="Make it the default repo (the agent's cwd); the others are then not.")
@json_option
@user_errors
def repo_add(name: str, path: str, packet: Path, make_default: bool, as_json: bool) -> None:
    """Declare the repository NAME at PATH (relative to the packet) in PACKET's manifest. The first repo declared
    is the default; only the manifest's repos: block is rewritten."""
    added = add_repo(packet, name, path, make_default)
    if as_json:
        emit_json({"packet": added.packet.name, "manifest": str(added.packet.manifest_file),
                   "repo": {"name": added.name, "path": added.path, "default": added.default},
                   **({"warning": added.warning} if added.warning else {})})
        return
    click.echo(f"added repo {added.name} ({added.path}{', default' if added.default else ''}) to packet "
               f"{added.packet.name}: {shown_path(added.packet.manifest_file)}")
    if added.warning:
        click.echo(f"warning: {added.warning}", err=True)


def register(group: click.Group) -> None:
    group.add_command(capabilities_command)
    subgroup(group, "template", "Prompt templates.").add_command(template_list)
    subgroup(group, "repo", "Repositories a packet works in.").add_command(repo_add)
