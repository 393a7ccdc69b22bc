"""An AttemptRecord as Dagster metadata: short searchable fields, the whole record as JSON, and Markdown
for people (verifier table, commits, transcript)."""

from __future__ import annotations

from typing import Any

from dagster import AssetCheckResult, AssetCheckSeverity, MetadataValue

from awp_pipelines.attempts import AttemptRecord
from awp_pipelines.lifecycle import trail_text
from awp_pipelines.redact import redact_obj
from awp_pipelines.verifiers.report import VerifierReport, cap_lines


def record_metadata(record: AttemptRecord, transcript: str) -> dict[str, Any]:
    ident, target = record.identity, record.target
    failure = record.failure or record.provider_failure
    meta: dict[str, Any] = {
        "awp/result": record.result,
        "awp/attempt": ident.attempt_id,
        "awp/agent_run": ident.agent_run,
        "awp/attempt_number": MetadataValue.int(ident.number),
        "awp/mode": ident.mode,
        "awp/packet_run": ident.packet_run,
        "awp/provider": target.provider,
        "awp/model": target.model,
        "awp/effort": target.effort or "default",
        "awp/reason": target.reason,
        "awp/failure_class": failure.failure_class if failure else "none",
        "awp/duration_s": MetadataValue.float(record.duration_s),
        "awp/tokens_in": MetadataValue.int(record.usage.input_tokens),
        "awp/tokens_out": MetadataValue.int(record.usage.output_tokens),
        # The packet run's running total, this Attempt included: what the spend caps are checked against.
        "awp/packet_run_spend": f"${record.packet_run_spend.cost_usd:.4f}, {record.packet_run_spend.tokens} tokens",
        "awp/lifecycle": trail_text(record.transitions),
        "awp/verifier": MetadataValue.md(verifier_markdown(record.verifier)),
        "awp/commits": MetadataValue.md(commits_markdown(record)),
        "awp/transcript": MetadataValue.md(transcript),
        "awp/record": MetadataValue.json(redact_obj(record.model_dump(mode="json"))),
    }
    if record.usage.cost_usd is not None:
        meta["awp/cost_usd"] = MetadataValue.float(record.usage.cost_usd)
    if record.control is not None:
        meta["awp/control"] = record.control.line()
    if target.account:
        meta["awp/account"] = target.account
    if record.session_id:
        meta["awp/session_id"] = record.session_id
    if ident.parent_run:
        meta["awp/parent_run"] = MetadataValue.dagster_run(ident.parent_run)
    if record.events_file:
        meta["awp/events"] = MetadataValue.path(record.events_file)
    return meta


def verifier_markdown(report: VerifierReport | None) -> str:
    if report is None:
        return "_No verify contract: the provider's result decided._"
    rows = ["| | item | details |", "|---|---|---|"]
    for item in report.items:
        mark = "fault" if item.fault else ("pass" if item.passed else "FAIL")
        details = "<br>".join(cap_lines(item.details, 5)).replace("|", "\\|")
        rows.append(f"| {mark} | {item.label} | {details} |")
    return "\n".join(rows)


def commits_markdown(record: AttemptRecord) -> str:
    if not record.commits:
        return "_No commit._"
    return "\n".join(f"- `{c.repo}`: {c.status}" + (f" `{c.sha[:12]}`" if c.sha else "") for c in record.commits)


def check_results(record: AttemptRecord) -> list[AssetCheckResult]:
    if record.verifier is None:
        return []
    results = []
    for item in record.verifier.items:
        results.append(AssetCheckResult(
            check_name=item.check_name, passed=item.passed and item.fault is None,
            severity=AssetCheckSeverity.ERROR, description=item.label,
            metadata={"kind": item.kind, "repo": item.repo or "", "path": item.path or "",
                      "attempt": record.identity.attempt_id, "fault": item.fault or "none",
                      # Text, not Markdown: the UI shows text inline, Markdown behind a click.
                      "details": MetadataValue.text("\n".join(cap_lines(item.details, 40)) or "met")}))
    return results


def unmet_summary(record: AttemptRecord) -> str:
    if record.verifier is None:
        return ""
    unmet = [item.label for item in record.verifier.items if not item.passed]
    return "unmet: " + "; ".join(unmet) if unmet else ""
