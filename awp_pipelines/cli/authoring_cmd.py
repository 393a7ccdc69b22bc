"""Authoring commands: `awp packet new`, `awp prompt new`, `awp checklist sync`, `awp profile new|list`."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from awp_pipelines import api
from awp_pipelines.cli.common import (
    WholeSummaryGroup,
    awp_command,
    emit_json,
    json_option,
    packet_argument,
    providers_option,
    shown_path,
    user_errors,
)
from awp_pipelines.cli_features import authoring
from awp_pipelines.core.packet.home_profile import list_profiles, profiles_dir
from awp_pipelines.core.packet.packet import load_packet

EXIT_OUT_OF_DATE = 1


@click.command("new")
@click.argument("folder", type=click.Path(file_okay=False))  # text: `./NAME` and `NAME` differ
@click.option("--name", help="Packet name (lowercase, digits, '_' or '-'); default: the folder's name.")
@click.option("--prompt-runner", is_flag=True,
              help="Write Prompt Runner's prompt_runner_packet.md instead of packet.yaml, so both tools run it.")
@click.option("--repo", "repos", multiple=True, metavar="NAME=PATH",
              help="A repository the prompts work in, PATH relative to the packet; repeatable, the first is "
              "the default (the agent's cwd).")
@json_option
@user_errors
def packet_new(folder: str, name: str | None, prompt_runner: bool, repos: tuple[str, ...], as_json: bool) -> None:
    """Create a packet in FOLDER: a manifest and an empty prompts/ folder.

    A bare name run at a project root (a folder with assets/) creates assets/NAME, where the Dagster UI
    finds it. Provider and model are left unset: the home config, a profile, a prompt or
    --provider/--model decide. Add prompts next with `awp prompt new FOLDER SLUG`.
    """
    parsed = dict(authoring.parse_repo_spec(r) for r in repos)
    target = authoring.packet_folder(folder, Path.cwd())
    manifest = authoring.new_packet(target, name, native=not prompt_runner, repo=parsed)
    packet = load_packet(manifest)
    if as_json:
        emit_json({"packet": packet.name, "manifest": str(manifest), "prompt_dir": str(packet.prompt_dir)})
        return
    click.echo(f"created packet {packet.name}: {shown_path(manifest)}")
    click.echo(f"next: {awp_command()} prompt new {shown_path(target)} SLUG")


@click.command("new")
@packet_argument
@click.argument("slug")
@click.option("--name", help="Human title (default: the slug in words).")
@click.option("--template", metavar="NAME",
              help="Template NAME.prompt.md from the packet's templates/, else the home templates folder "
              "(default: the manifest's prompt_template, else a built-in body).")
@click.option("--phase", metavar="PHASE", help="Phase key from the manifest (default: the previous prompt's).")
@click.option("--target", "targets", multiple=True, metavar="REPO",
              help="Target repo name; repeatable, the first is the agent's cwd (default: the default repo).")
@click.option("--agent", metavar="NAME", help="The prompt's agent: a role, or an agent of providers.yaml, whose "
              "`template` is the default template.")
@providers_option
@json_option
@user_errors
def prompt_new(packet: Path, slug: str, name: str | None, template: str | None, phase: str | None,
               targets: tuple[str, ...], agent: str | None, providers_file: Path | None, as_json: bool) -> None:
    """Add prompts/NN_SLUG.prompt.md to PACKET with the next free number.

    The front matter carries id, name, phase, targets, a commit message and a placeholder `verify:`
    contract that fails until you name the real deliverables; then run `awp checklist sync PACKET`.
    """
    agents = api.catalog(providers_file).agents if agent else {}
    file = authoring.new_prompt(packet, slug, name=name, template=template, phase=phase, targets=list(targets),
                                agent=agent, agents=agents)
    if as_json:
        emit_json({"prompt": file.name.split("_", 1)[0], "file": str(file)})
        return
    click.echo(f"created {shown_path(file)}")
    click.echo(f"next: replace the verify: placeholder, then run: {awp_command()} checklist sync {shown_path(packet)}")


@click.command("sync")
@packet_argument
@click.option("--check", is_flag=True,
              help="Write nothing; exit 1 when a checklist is missing or out of date (for CI).")
@json_option
@user_errors
def checklist_sync(packet: Path, check: bool, as_json: bool) -> None:
    """Regenerate prompts/NN_slug.prompt.checklist.md from each prompt's `verify:` contract.

    The files match Prompt Runner's `checklist sync` byte for byte; only changed files are rewritten.
    """
    loaded = load_packet(packet)
    changed = authoring.sync_checklists(loaded, check=check)
    if as_json:
        emit_json({"packet": loaded.name, "check": check, "out_of_date" if check else "updated":
                   [str(p) for p in changed], "checked": len(loaded.prompts)})
    elif not changed:
        click.echo(f"{len(loaded.prompts)} checklists up to date")
    else:
        verb = "out of date" if check else "updated"
        for path in changed:
            click.echo(f"{verb}: {path}")
        if check:
            click.echo(f"regenerate them with: {awp_command()} checklist sync {shown_path(packet)}")
    if check and changed:
        sys.exit(EXIT_OUT_OF_DATE)


@click.command("new")
@click.argument("name")
@click.option("--provider", help="Provider (claude, codex, opencode, gemini, simulated, …).")
@click.option("--model", help="Model id or alias from providers.yaml.")
@click.option("--effort", help="Reasoning effort (minimal, low, medium, high, xhigh, max).")
@click.option("--force", is_flag=True, help="Overwrite an existing profile of this name.")
@json_option
@user_errors
def profile_new(name: str, provider: str | None, model: str | None, effort: str | None, force: bool,
                as_json: bool) -> None:
    """Write the home profile NAME (profiles/NAME.md under AWP_CONFIG_HOME, default ~/.config/awp).

    A packet uses it with `profile: NAME` in its manifest, or `--profile NAME`; it sits between the home
    config.md and the packet in the precedence order.
    """
    file = authoring.new_profile(name, provider=provider, model=model, effort=effort, force=force)
    if as_json:
        emit_json({"profile": name, "file": str(file)})
    else:
        click.echo(f"wrote {file}")


@click.command("list")
@json_option
@user_errors
def profile_list(as_json: bool) -> None:
    """List the home profiles with their provider, model and effort."""
    profiles = list_profiles()
    rows = [{"name": p.name, "file": str(p.file), "provider": p.settings.provider, "model": p.settings.model,
             "reasoning_effort": p.settings.reasoning_effort, "description": p.settings.description}
            for p in profiles]
    if as_json:
        emit_json(rows)
        return
    if not rows:
        click.echo(f"no profiles in {profiles_dir()} (create one with: {awp_command()} profile new NAME)")
    for row in rows:
        details = " ".join(f"{k}={row[k]}" for k in ("provider", "model", "reasoning_effort") if row[k])
        click.echo(f"{row['name']}  {details or '(no settings)'}  {row['file']}")


def subgroup(group: click.Group, name: str, help_text: str) -> click.Group:
    """Reuse a group another command module already registered (e.g. `packet lint`), else create it."""
    existing = group.commands.get(name)
    if isinstance(existing, click.Group):
        return existing
    sub = WholeSummaryGroup(name, help=help_text)
    group.add_command(sub)
    return sub


def register(group: click.Group) -> None:
    subgroup(group, "packet", "Create and inspect packets.").add_command(packet_new)
    subgroup(group, "prompt", "Add prompts to a packet.").add_command(prompt_new)
    subgroup(group, "checklist", "Generated checklists next to each prompt.").add_command(checklist_sync)
    profiles = subgroup(group, "profile", "Home profiles: execution defaults shared by packets.")
    profiles.add_command(profile_new)
    profiles.add_command(profile_list)
