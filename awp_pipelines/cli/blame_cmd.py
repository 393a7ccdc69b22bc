"""`awp blame FILE[:LINE]`: which packet, prompt, Attempt, agent and Dagster run wrote a line."""

from __future__ import annotations

import sys
from datetime import UTC, datetime

import click
from rich.table import Table
from rich.text import Text

from awp_pipelines.cli.common import console, emit_json, json_option, out
from awp_pipelines.cli_features.blame import (
    DAGSTER_URL_ENV,
    BlamedLines,
    BlameError,
    Provenance,
    blame,
    by_attempt,
    parse_target,
)
from awp_pipelines.core.records.plural import counted

EXIT_NOT_AWP = 1
EXIT_INPUT = 2


@click.command("blame")
@click.argument("target", metavar="FILE[:LINE]")
@click.option("--dagster-url", envvar=DAGSTER_URL_ENV, metavar="URL",
              help=f"Dagster webserver base URL, for links to runs (default: ${DAGSTER_URL_ENV}).")
@json_option
def blame_command(target: str, dagster_url: str | None, as_json: bool) -> None:
    """Trace a line of a committed file (or every line of it) to the Attempt that wrote it: packet, prompt,
    AgentRun, Attempt, mode, reason, provider, account, model and Dagster run, from the commit's AWP-*
    trailers.

    Exits 0 when AWP wrote the line (for a whole file: any line), 1 when it did not, 2 for bad input.
    """
    try:
        path, line = parse_target(target)
        entries = blame(path, line, base_url=dagster_url or "")
    except BlameError as err:
        console.print(f"[red]error:[/red] {err}", markup=True, highlight=False)
        sys.exit(EXIT_INPUT)
    found = any(e.by_awp for e in entries)
    if as_json:
        emit_json({"target": target, "by_awp": found, "lines": [e.as_dict() for e in entries]})
    elif line is not None:
        _print_line(entries[0])
    else:
        _print_file(str(path), entries)
    sys.exit(0 if found else EXIT_NOT_AWP)


def _print_line(entry: BlamedLines) -> None:
    where = f"{entry.file}:{entry.start}"
    out.print(Text.assemble((where, "bold"), "  ", (entry.text[0].strip(), "dim")))
    if entry.commit is None:
        out.print(Text("not committed yet: no commit, so no Attempt wrote this line", style="yellow"))
        return
    if entry.awp.forged:
        out.print(Text(f"not written by AWP: {_commit_line(entry)} claims an AWP-Attempt trailer, but AWP's seal "
                       "does not hold (a forged or altered commit)", style="red"))
        return
    if not entry.by_awp:
        out.print(Text(f"not written by AWP: {_commit_line(entry)} has no AWP-Attempt trailer", style="yellow"))
        return
    out.print(_provenance_table(entry.awp, _commit_line(entry)))


def _print_file(file: str, entries: list[BlamedLines]) -> None:
    groups = by_attempt(entries)
    total = sum(e.end - e.start + 1 for e in entries)
    awp_lines = sum(e.end - e.start + 1 for _, group in groups for e in group)
    out.print(Text(f"{file}: {awp_lines} of {counted(total, 'line')} written by AWP", style="bold"))
    for prov, group in groups:
        ranges = ", ".join(f"{e.start}" if e.start == e.end else f"{e.start}-{e.end}" for e in group)
        out.print(Text(f"\nlines {ranges}", style="bold"))
        out.print(_provenance_table(prov, _commit_line(group[0])))


def _provenance_table(prov: Provenance, commit: str) -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="cyan", no_wrap=True)
    table.add_column()
    rows = [
        ("commit", commit),
        ("packet", prov.packet), ("prompt", prov.prompt), ("agent run", prov.agent_run),
        ("attempt", prov.attempt), ("mode", prov.mode), ("reason", prov.reason),
        ("provider", prov.provider), ("account", prov.account), ("model", prov.model),
        ("dagster run", " ".join(v for v in (prov.dagster_run, prov.dagster_run_url) if v) or None),
    ]
    for label, value in rows:
        if value:
            table.add_row(label, Text(value))  # Text: brackets in a reason are not markup
    return table


def _commit_line(entry: BlamedLines) -> str:
    c = entry.commit
    if c is None:
        return "uncommitted"
    when = datetime.fromtimestamp(c.author_time, UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"{c.sha[:12]} {c.summary} ({c.author}, {when})"


def register(group: click.Group) -> None:
    group.add_command(blame_command)
