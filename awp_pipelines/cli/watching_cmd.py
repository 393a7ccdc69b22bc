"""`awp watch`: is the packet run alive, and what is it doing? A live view (or JSON lines) read from the
Dagster instance: the run that holds each Attempt, how long it has been quiet, what is due, the repos."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

import click
from rich.console import Group
from rich.live import Live
from rich.markup import escape
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from awp_pipelines.cli.common import (
    console,
    open_catalog,
    open_packet,
    out,
    providers_option,
    translator_option,
    user_errors,
)
from awp_pipelines.cli.status_cmd import instance_option
from awp_pipelines.core.engine.status_report import WatchReading

_ENDED = ("completed", "failed", "blocked", "stopped", "not_started")  # interrupted: a resume may come


@click.command("watch")
@click.argument("packet", type=click.Path(path_type=Path), default=".")
@click.option("--interval", type=click.FloatRange(min=0.5), default=10.0, show_default=True,
              help="Seconds between readings.")
@click.option("--once", is_flag=True, help="One reading, then exit: 0 when healthy, 1 on a violation.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per reading, one per line.")
@click.option("--progress-timeout", type=click.FloatRange(min=0), default=60.0, show_default=True, metavar="M",
              help="Minutes a started run may store nothing (progress_stale), or due work may wait with no run "
              "(not_running); the default is Prompt Runner's progress_timeout, 3600 s.")
@click.option("--packet-run", metavar="ID", help="Watch this packet run (default: the packet's newest).")
@instance_option
@providers_option
@translator_option
@user_errors
def watch_command(packet: Path, interval: float, once: bool, as_json: bool, progress_timeout: float,
                  packet_run: str | None, instance_dir: Path | None, providers_file: Path | None,
                  translator: str | None) -> None:
    """Watch PACKET's newest packet run until it ends: prompts done, the Attempt running now, minutes quiet,
    dirty files and new commits per repo, and the violations `not_running` and `progress_stale`."""
    from awp_pipelines.orchestration.compile.binding import PacketBinding
    from awp_pipelines.orchestration.compile.translator import load_translator
    from awp_pipelines.orchestration.ledger.factory import open_ledger
    from awp_pipelines.orchestration.ledger.instance import instance_to_read
    from awp_pipelines.orchestration.views.watch import watch_reading

    loaded = open_packet(packet)
    binding = PacketBinding.of(loaded, open_catalog(providers_file), translator=load_translator(translator))
    chosen = instance_to_read(loaded.root, instance_dir)
    (console if as_json else out).print(chosen.line(), highlight=False)  # JSON lines on stdout stay clean
    with open_ledger(chosen.home, many_reads=True) as (ledger, _):
        _watch(lambda: watch_reading(ledger, binding, packet_run, progress_timeout), once, as_json, interval)


def _watch(read: Callable[[], WatchReading], once: bool, as_json: bool, interval: float) -> None:
    """Read and show until the packet run ends (or once); exits with what the last reading says."""
    try:
        reading = read()
        if once:
            click.echo(reading.model_dump_json()) if as_json else out.print(render(reading))
            sys.exit(1 if reading.violations else 0)
        if as_json:
            while True:
                click.echo(reading.model_dump_json())
                sys.stdout.flush()
                if reading.state in _ENDED:
                    break
                time.sleep(interval)
                reading = read()
        else:
            with Live(render(reading), console=out, refresh_per_second=4) as live:
                while reading.state not in _ENDED:
                    time.sleep(interval)
                    reading = read()
                    live.update(render(reading))
    except KeyboardInterrupt:
        sys.exit(130)
    sys.exit(0 if reading.state == "completed" and not reading.violations else 1)


def render(r: WatchReading) -> Group:
    if r.packet_run is None:
        return Group(Text(f"{r.packet}: no packet run in this instance yet"))
    why = f" ({escape(r.reason)})" if r.reason else ""
    head = Text.from_markup(f"[bold]{escape(r.packet)}[/bold] · packet run {r.packet_run} · {r.state}{why} · "
                            f"{r.completed}/{r.prompts} prompts completed · {r.at}")
    bar = Table.grid(padding=(0, 1))
    bar.add_row(ProgressBar(total=max(r.prompts, 1), completed=r.completed, width=40), f"{r.completed}/{r.prompts}")
    parts: list = [head, bar]
    for c in r.current:
        quiet = f" · quiet {c.minutes_quiet:.1f} min" if c.minutes_quiet is not None else ""
        parts.append(Text(f"▶ {c.prompt} {c.name}: {c.attempt} ({c.mode}) on {c.target} · "
                          f"Dagster run {(c.dagster_run or '')[:8]}{quiet}"))
        if c.progress:
            parts.append(Text(f"  progress: {c.progress}"))
    if r.pending:
        parts.append(Text(f"due: {', '.join(r.pending)}"))
    for repo in r.repos:
        dirty = "?" if repo.dirty_files is None else repo.dirty_files
        commits = "?" if repo.new_commits is None else repo.new_commits
        parts.append(Text(f"  {repo.repo}: {dirty} dirty file{'' if dirty == 1 else 's'} · "
                          f"{commits} new commit{'' if commits == 1 else 's'}"))
    for violation, detail in zip(r.violations, r.details, strict=False):
        parts.append(Text.from_markup(f"[red]{violation}[/red]: {escape(detail)}"))
    return Group(*parts)


def register(group: click.Group) -> None:
    group.add_command(watch_command)
