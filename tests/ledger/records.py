"""Attempt records for the ledger's tests: what a finished Attempt stores, with its account and failure."""

from __future__ import annotations

from awp_pipelines.core.engine.attempts import AttemptIdentity, AttemptRecord, AttemptTarget
from awp_pipelines.core.records.failures import FailureEnvelope


def a_record(packet_run: str, number: int, result: str, run_id: str, prompt: str = "01", account: str = "acct",
             failure_class: str = "provider_runtime_claim", ended_at: str = "2026-11-30T00:00:02+00:00"
             ) -> AttemptRecord:
    failure = FailureEnvelope.for_class(failure_class, "it failed") if result == "provider_failed" else None
    return AttemptRecord(
        identity=AttemptIdentity(attempt_id=f"{packet_run}.{prompt}.a{number}", agent_run=f"{packet_run}.{prompt}",
                                 number=number, packet="p", packet_run=packet_run, prompt=prompt,
                                 mode="run" if number == 1 else "retry", dagster_run=run_id),
        target=AttemptTarget(provider="simulated", provider_kind="simulated", account=account, model="m",
                             reason="why"),
        role="coder", prompt_name="P", workspace={}, cwd=".", checkpoint={}, started_at="2026-11-30T00:00:00+00:00",
        ended_at=ended_at, duration_s=2.0, result=result, failure=failure)  # type: ignore[arg-type]
