"""The pure side of status and the asset page: Attempt summaries, states, totals, the history table, owners."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from awp_pipelines.core.engine.attempt_record import AttemptIdentity, AttemptRecord, AttemptTarget, Usage
from awp_pipelines.core.engine.status_report import AttemptSummary, PromptStatus, totals_of
from awp_pipelines.core.packet.model.manifest import Manifest
from awp_pipelines.core.records.failures import FailureEnvelope


def _record(number: int, result: str = "completed", cost: float | None = 0.5) -> AttemptRecord:
    failure = None if result == "completed" else FailureEnvelope.for_class("provider_rate_limit", "slow down")
    return AttemptRecord(
        identity=AttemptIdentity(attempt_id=f"pr-1.01.a{number}", agent_run="pr-1.01", number=number, packet="p",
                                 packet_run="pr-1", prompt="01", mode="run" if number == 1 else "retry",
                                 dagster_run=f"run-{number}"),
        target=AttemptTarget(provider="simulated", provider_kind="simulated", account="sim-a", model="m",
                             reason="why"),
        role="coder", prompt_name="P", workspace={}, cwd=".", checkpoint={}, started_at="2026-11-30T00:00:00+00:00",
        ended_at="2026-11-30T00:00:02+00:00", duration_s=2.0, result=result, failure=failure,  # type: ignore[arg-type]
        usage=Usage(input_tokens=10, output_tokens=5, cost_usd=cost))


def test_a_summary_carries_what_status_and_the_history_table_show() -> None:
    failed = AttemptSummary.of(_record(1, "provider_failed"))
    assert (failed.result, failed.failure_class, failed.account, failed.dagster_run) == (
        "provider_failed", "provider_rate_limit", "sim-a", "run-1")
    assert AttemptSummary.of(_record(2)).failure_class is None


def test_totals_add_up_and_cost_is_null_when_no_attempt_reported_one() -> None:
    attempts = [AttemptSummary.of(_record(1, "provider_failed")), AttemptSummary.of(_record(2))]
    totals = totals_of([PromptStatus(prompt="01", name="a", state="completed", attempts=attempts)], runs=2)
    assert (totals.attempts, totals.completed, totals.tokens_in, totals.tokens_out) == (2, 1, 20, 10)
    assert totals.cost_usd == 1.0
    no_cost = [AttemptSummary.of(_record(1, cost=None))]
    assert totals_of([PromptStatus(prompt="01", name="a", state="completed", attempts=no_cost)], 1).cost_usd is None


def test_the_history_table_marks_failures_links_runs_and_stays_bounded() -> None:
    from awp_pipelines.orchestration.compile.metadata import MAX_HISTORY_ROWS, history_markdown

    table = history_markdown([AttemptSummary.of(_record(1, "provider_failed")), AttemptSummary.of(_record(2))])
    lines = table.splitlines()
    assert lines[0] == "| # | mode | result | run |"  # four columns fit the asset's Overview at 1400 px
    # The number links to the Attempt's page (`awp serve`, AWP_PAGE_URL), where the target and cost are.
    assert lines[2].startswith("| [1](http://127.0.0.1:3001/attempts/pr-1.01.a1) | run | **✗\u00a0provider failed** "
                               "(provider rate limit) | [run-1]")
    assert all(line.count(" | ") == 3 for line in lines[2:])
    assert "[run-1](/runs/run-1)" in lines[2] and "| ✓\u00a0completed |" in lines[3]
    long = history_markdown([AttemptSummary.of(_record(n)) for n in range(1, MAX_HISTORY_ROWS + 6)])
    assert len(long.splitlines()) == 2 + 1 + MAX_HISTORY_ROWS and "5 earlier Attempts" in long


def test_record_metadata_leaves_out_empty_and_none_values() -> None:
    from awp_pipelines.orchestration.compile.metadata import record_metadata

    record = _record(1).model_copy(update={"target": AttemptTarget(provider="simulated", provider_kind="simulated",
                                                                      model="m", reason="why")})
    meta = record_metadata(record, "")
    assert "awp/account" not in meta and "awp/failure_class" not in meta and "awp/transcript" not in meta
    assert "awp/effort" not in meta and "awp/events" not in meta and "awp/verifier" not in meta
    assert all(value not in (None, "", "none") for value in meta.values())


def test_owners_are_emails_or_teams() -> None:
    assert Manifest(name="p", owners=["ana@example.com", "team:docs"]).owners == ["ana@example.com", "team:docs"]
    with pytest.raises(ValidationError, match="neither an email address nor"):
        Manifest(name="p", owners=["ana"])
