"""An AttemptRecord as Dagster metadata: short searchable fields, the whole record as JSON, and Markdown
for people (Attempt history, verifier table, commits, transcript). Empty and `none` values are left out:
the asset page shows what happened, not what did not."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dagster import AssetCheckResult, AssetCheckSeverity, MetadataValue

from awp_pipelines.core.engine.attempts import AttemptRecord
from awp_pipelines.core.engine.status_report import AttemptSummary
from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.core.records.attempt_lifecycle import trail_text
from awp_pipelines.core.records.redact import redact, redact_obj
from awp_pipelines.core.verifiers.report import VerifierReport, cap_lines


def record_metadata(record: AttemptRecord, transcript: str, history: Sequence[AttemptSummary] = (),
                    packet_root: Path | None = None) -> dict[str, Any]:
    """`history`: the AgentRun's Attempts before this one (this one is added as the last row)."""
    ident, target = record.identity, record.target
    failure = None if record.completed else record.failure or record.provider_failure
    meta: dict[str, Any] = {
        tags.RESULT: record.result,
        tags.ATTEMPT: ident.attempt_id,
        tags.AGENT_RUN: ident.agent_run,
        tags.ATTEMPT_NUMBER: MetadataValue.int(ident.number),
        tags.MODE: ident.mode,
        tags.PACKET_RUN: ident.packet_run,
        tags.PROVIDER: target.provider,
        tags.ACCOUNT: target.account,
        tags.MODEL: target.model,
        tags.EFFORT: target.effort,
        tags.REASON: target.reason,
        tags.FAILURE_CLASS: failure.failure_class if failure else None,
        tags.FAILURE: redact(failure.message) if failure else None,
        tags.DURATION_S: MetadataValue.float(record.duration_s),
        tags.TOKENS_IN: MetadataValue.int(record.usage.input_tokens),
        tags.TOKENS_OUT: MetadataValue.int(record.usage.output_tokens),
        # A MetadataValue is truthy even for 0, so the zero test comes first: an unused count is left out.
        tags.TOKENS_CACHED: MetadataValue.int(record.usage.cached_input_tokens)
        if record.usage.cached_input_tokens else None,
        tags.TOKENS_REASONING: MetadataValue.int(record.usage.reasoning_tokens)
        if record.usage.reasoning_tokens else None,
        tags.COST_SOURCE: record.usage.cost_source if record.usage.cost_source != "unknown" else None,
        tags.COST_USD: MetadataValue.float(record.usage.cost_usd) if record.usage.cost_usd is not None else None,
        tags.ATTEMPTS: MetadataValue.md(history_markdown([*history, AttemptSummary.of(record)])),
        tags.VERIFIER: MetadataValue.md(verifier_markdown(record.verifier, packet_root)) if record.verifier else None,
        tags.COMMITS: MetadataValue.md(commits_markdown(record)) if record.commits else None,
        tags.TRANSCRIPT: MetadataValue.md(transcript) if transcript.strip() else None,
        tags.SESSION_ID: record.session_id,
        tags.PARENT_RUN: MetadataValue.dagster_run(ident.parent_run) if ident.parent_run else None,
        tags.EVENTS: MetadataValue.path(packet_relative(record.events_file, packet_root))
        if record.events_file else None,
        # The packet run's running total, this Attempt included: what the spend caps are checked against.
        tags.PACKET_RUN_SPEND: f"${record.packet_run_spend.cost_usd:.4f}, {record.packet_run_spend.tokens} tokens",
        tags.LIFECYCLE: trail_text(record.transitions),
        tags.CONTROL: record.control.line() if record.control is not None else None,
        tags.ISOLATION: record.isolation.line() if record.isolation is not None else None,
        tags.RECORD: MetadataValue.json(redact_obj(record.model_dump(mode="json"))),
    }
    return {key: value for key, value in meta.items() if value not in (None, "", "none")}


def packet_relative(path: str, packet_root: Path | None) -> str:
    """`demo/.awp/events/…`: relative to the packet's folder (named by it), the same on every machine."""
    if packet_root is None or not os.path.isabs(path):
        return path
    try:
        return f"{packet_root.name}/{Path(path).relative_to(packet_root)}"
    except ValueError:
        return path


# Seven narrow columns so the table fits a 1400 px asset page without a scroll (issue 15 item 7): the result
# comes right after the mode, the target is one cell, and the reason, tokens and failure message are one click
# away on the Attempt's run (its record metadata), not columns that wrap one word a line.
_HISTORY_HEAD = ("| # | mode | result | target | duration | cost | run |\n"
                 "|---|---|---|---|---|---|---|")


MAX_HISTORY_ROWS = 20  # each record stores the table: bounded, so long AgentRuns do not grow every record


def history_markdown(attempts: Sequence[AttemptSummary]) -> str:
    """The AgentRun's Attempts, oldest first (the latest MAX_HISTORY_ROWS); each run links to its page, where
    the Attempt's reason, tokens and failure are."""
    rows = [_HISTORY_HEAD]
    if len(attempts) > MAX_HISTORY_ROWS:
        rows.append(f"| … | {len(attempts) - MAX_HISTORY_ROWS} earlier Attempts: `awp status` lists them all |"
                    + " |" * 5)
    for a in attempts[-MAX_HISTORY_ROWS:]:
        result = a.result if a.result in ("completed", "running") else f"**{a.result}**"
        if a.failure_class and a.failure_class != a.result:
            result += f" ({a.failure_class})"
        run = f"[{a.dagster_run[:8]}](/runs/{a.dagster_run})" if a.dagster_run else ""
        cells = [str(a.number), a.mode, result, _target(a),
                 f"{a.duration_s:.1f} s" if a.duration_s is not None else "",
                 f"${a.cost_usd:.4f}" if a.cost_usd is not None else "", run]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def _target(a: AttemptSummary) -> str:
    """`provider/model` (the account only when the provider has one): one cell instead of three."""
    return _cell("/".join(part for part in (a.provider, a.account, a.model) if part))


def _cell(text: str) -> str:
    return redact(text).replace("|", "\\|").replace("\n", " ")


def relative_text(text: str, packet_root: Path | None) -> str:
    """Paths under the packet's folder as `demo/…` (verifier details name the files they checked)."""
    return text.replace(f"{packet_root}{os.sep}", f"{packet_root.name}/") if packet_root else text


def verifier_markdown(report: VerifierReport, packet_root: Path | None = None) -> str:
    rows = ["| | item | details |", "|---|---|---|"]
    for item in report.items:
        mark = "**FAULT**" if item.fault else ("pass" if item.passed else "**FAIL**")
        details = "<br>".join(_cell(relative_text(line, packet_root)) for line in cap_lines(item.details, 5))
        rows.append(f"| {mark} | {_cell(item.readable)} | {details} |")
    return "\n".join(rows)


def commits_markdown(record: AttemptRecord) -> str:
    return "\n".join(f"- `{c.repo}`: {c.status}" + (f" `{c.sha[:12]}`" if c.sha else "") for c in record.commits)


def check_results(record: AttemptRecord, packet_root: Path | None = None) -> list[AssetCheckResult]:
    if record.verifier is None:
        return []
    results = []
    for item in record.verifier.items:
        meta: dict[str, Any] = {"attempt": record.identity.attempt_id, "kind": item.kind, "repo": item.repo,
                                "path": item.path, "fault": item.fault, "exit_code": item.exit_code,
                                # Text, not Markdown: the UI shows text inline, Markdown behind a click.
                                "details": MetadataValue.text(
                                    relative_text("\n".join(cap_lines(item.details, 40)), packet_root) or "met")}
        results.append(AssetCheckResult(
            check_name=item.check_name, passed=item.passed and item.fault is None,
            severity=AssetCheckSeverity.ERROR, description=item.readable,
            metadata={k: v for k, v in meta.items() if v not in (None, "")}))
    return results


def unmet_summary(record: AttemptRecord) -> str:
    if record.verifier is None:
        return ""
    unmet = [item.readable for item in record.verifier.items if not item.passed]
    return "unmet: " + "; ".join(unmet) if unmet else ""
