"""An AttemptRecord as Dagster metadata: the link to its page first, a short set people read, the fields code
reads back, the whole record as JSON, and Markdown for people (the Attempt history, the transcript). Empty and
`none` values are left out: the asset page shows what happened, not what did not."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dagster import AssetCheckResult, AssetCheckSeverity, MetadataValue

from awp_pipelines.core.engine.attempt_record import AttemptRecord
from awp_pipelines.core.engine.status_report import AttemptSummary
from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.core.records.attempt_lifecycle import trail_text
from awp_pipelines.core.records.redact import redact, redact_obj
from awp_pipelines.core.verifiers.report import cap_lines
from awp_pipelines.orchestration.compile.page_link import attempt_page_url


def record_metadata(record: AttemptRecord, transcript: str, history: Sequence[AttemptSummary] = (),
                    state: str | None = None, coming: str | None = None) -> dict[str, Any]:
    """`history`: the AgentRun's Attempts before this one (this one is added as the last row). `state`: the
    AgentRun's state once this Attempt ended, shown after the result. `coming`: the next Attempt and who
    launches it (`repair next — …`), when one follows."""
    ident, target = record.identity, record.target
    failure = None if record.completed else record.failure or record.provider_failure
    meta: dict[str, Any] = {
        # First and short, in this order: what the asset page shows before anything else. The page link
        # leads to the Attempt as a chat (`awp serve`), where the rest is: its verifier items, commit and
        # trailers, tokens, session, provenance. Only what code reads back or people filter on stays here.
        tags.PAGE: MetadataValue.url(attempt_page_url(ident.attempt_id)),
        tags.RESULT: record.result,
        tags.NEXT: redact(coming) if coming else None,
        tags.AGENT_RUN_STATE: redact(state) if state else None,
        tags.REASON: target.reason,
        tags.TARGET: "/".join(part for part in (target.provider, target.account, target.model) if part),
        tags.COST_USD: MetadataValue.float(record.usage.cost_usd) if record.usage.cost_usd is not None else None,
        tags.COMMIT: " ".join(f"{c.repo}@{c.sha[:12]}" for c in record.commits if c.sha) or None,
        tags.FAILURE_CLASS: failure.failure_class if failure else None,
        tags.FAILURE: redact(failure.message) if failure else None,
        tags.ATTEMPTS: MetadataValue.md(history_markdown([*history, AttemptSummary.of(record)], coming)),
        # The Attempt's id (readers find its events by it) and mode (the asset's Events tab shows it). Its
        # AgentRun, packet run (a run tag), tokens and events file are not repeated here: the record holds
        # them, the start marker has the events file, the transcript's last lines the tokens and the events
        # file (each entry costs every Attempt ~150 bytes in Dagster's event log).
        tags.ATTEMPT: ident.attempt_id,
        tags.MODE: ident.mode,
        tags.DURATION_S: MetadataValue.float(record.duration_s),  # a number: Dagster plots it across Attempts
        # The Markdown transcript stays for a deployment without `awp serve`: the page is its better reading.
        tags.TRANSCRIPT: MetadataValue.md(transcript) if transcript.strip() else None,
        tags.PARENT_RUN: MetadataValue.dagster_run(ident.parent_run) if ident.parent_run else None,
        # The packet run's running total, this Attempt included: what the spend caps are checked against.
        tags.PACKET_RUN_SPEND: f"${record.packet_run_spend.cost_usd:.4f}, {record.packet_run_spend.tokens} tokens",
        tags.LIFECYCLE: trail_text(record.transitions),
        tags.CONTROL: record.control.line() if record.control is not None else None,
        tags.ISOLATION: record.isolation.line() if record.isolation is not None else None,
        tags.RECORD: MetadataValue.json(redact_obj(record.stored())),
    }
    return {key: value for key, value in meta.items() if value not in (None, "", "none")}


# Four narrow columns, so the table fits the asset's Overview at 1400 px (its metadata column is about 600 px
# wide; seven columns were cut at the duration): the number links to the Attempt's page, where its target,
# duration, cost, tokens, reason and failure are; the run links to Dagster's run page.
_HISTORY_HEAD = ("| # | mode | result | run |\n"
                 "|---|---|---|---|")


MAX_HISTORY_ROWS = 20  # each record stores the table: bounded, so long AgentRuns do not grow every record


def history_markdown(attempts: Sequence[AttemptSummary], coming: str | None = None) -> str:
    """The AgentRun's Attempts, oldest first (the latest MAX_HISTORY_ROWS); each number links to its page. When
    another Attempt follows, `coming` (`repair next — …`) is its row and the line under the table."""
    rows = [_HISTORY_HEAD]
    if len(attempts) > MAX_HISTORY_ROWS:
        rows.append(f"| … | {len(attempts) - MAX_HISTORY_ROWS} earlier Attempts: `awp status` lists them all |"
                    + " |" * 2)
    for a in attempts[-MAX_HISTORY_ROWS:]:
        # A mark that reads without colour, and words that wrap (`verification failed`, not one long token): the
        # column stays narrow enough for the run column to show at 1400 px; the mark stays with its first word.
        words = a.result.replace("_", " ")
        result = {"completed": f"✓\u00a0{words}", "running": f"…\u00a0{words}"}.get(a.result, f"**✗\u00a0{words}**")
        if a.failure_class and a.failure_class != a.result:
            result += f" ({a.failure_class.replace('_', ' ')})"
        run = f"[{a.dagster_run[:8]}](/runs/{a.dagster_run})" if a.dagster_run else ""
        rows.append("| " + " | ".join([f"[{a.number}]({attempt_page_url(a.attempt)})", a.mode, result, run]) + " |")
    if coming and attempts:
        mode = coming.split(" next", 1)[0]
        rows.append(f"| {attempts[-1].number + 1} | {_cell(mode)} | **{_cell(mode)} next** | |")
        rows.append(f"\n{_cell(coming)}")
    return "\n".join(rows)


def _cell(text: str) -> str:
    return redact(text).replace("|", "\\|").replace("\n", " ")


def relative_text(text: str, packet_root: Path | None) -> str:
    """Paths under the packet's folder as `demo/…` (verifier details name the files they checked)."""
    return text.replace(f"{packet_root}{os.sep}", f"{packet_root.name}/") if packet_root else text


def check_results(record: AttemptRecord, packet_root: Path | None = None) -> list[AssetCheckResult]:
    if record.verifier is None:
        return []
    results = []
    for item in record.verifier.items:
        # What was found, and why a check could not run. Not the item's kind, repo, path or Attempt: its
        # description (the check's own) says what it demands, the Attempt's page has the rest, and Dagster
        # stores each evaluation twice (its event and its check execution row), for every Attempt.
        meta: dict[str, Any] = {"fault": item.fault, "exit_code": item.exit_code,
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
