"""`awp lint`: a packet's authoring hazards, one line each, before anything runs."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.text import Text

from awp_pipelines import api
from awp_pipelines.cli.common import (
    emit_json,
    fail_input,
    json_option,
    out,
    packet_argument,
    providers_option,
    user_errors,
)
from awp_pipelines.core.lint import Finding, LintReport
from awp_pipelines.core.packet.errors import PacketError

_STYLE = {"error": "red", "warning": "yellow"}


@click.command("lint", short_help="Check PACKET for authoring hazards without running anything.")
@packet_argument
@click.option("--strict", is_flag=True, help="Warnings fail too (exit 1).")
@providers_option
@json_option
@user_errors
def lint_command(packet: Path, strict: bool, providers_file: Path | None, as_json: bool) -> None:
    """Check PACKET for authoring hazards without running anything: prompt ids and filenames, repos,
    verify contracts, providers, models, accounts, dependencies, phases, templates and secrets.

    Exits 0 when clean (warnings allowed), 1 on errors (or warnings with --strict), 2 when the packet
    does not load at all: then the one error line says which file, line and key.
    """
    report = api.lint(packet, providers=providers_file)
    code = report.exit_code(strict)
    if as_json:
        emit_json(report)
    invalid = report.invalid
    if invalid is not None:
        fail_input(PacketError(invalid.file, invalid.message, key=invalid.key, line=invalid.line, hint=invalid.hint))
    if not as_json:
        print_report(report)
    sys.exit(code)


def print_report(report: LintReport) -> None:
    for finding in report.findings:
        out.print(finding_line(finding))
    errors, warnings = len(report.errors), len(report.warnings)
    style = "red" if errors else "yellow" if warnings else "green"
    summary = f"{report.packet}: {_count(errors, 'error')}, {_count(warnings, 'warning')}"
    out.print(Text(summary, style=f"bold {style}"))


def finding_line(finding: Finding) -> Text:
    """`file:line: severity kind: message (hint)`, coloured; message text is never read as markup."""
    where = finding.file + (f":{finding.line}" if finding.line else "")
    line = Text.assemble(
        (f"{where}: ", "bold"),
        (finding.severity, _STYLE[finding.severity]),
        " ",
        (finding.kind, "cyan"),
        f": {finding.message}",
    )
    if finding.hint:
        line.append(f" ({finding.hint})", style="dim")
    return line


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def register(group: click.Group) -> None:
    group.add_command(lint_command)

