"""Executing runs: a created run executed, and whether a signal ended it (not state: nothing here is kept)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dagster import DagsterEventType, DagsterInstance

if TYPE_CHECKING:
    from dagster._core.definitions.unresolved_asset_job_definition import UnresolvedAssetJobDefinition
    from dagster._core.execution.execution_result import ExecutionResult


__all__ = ["ExecutionResult", "UnresolvedAssetJobDefinition"]


def execute_run(recon: Any, run: Any, instance: DagsterInstance) -> ExecutionResult:
    """Execute a run already created (Dagster's public `execute_job` creates its own, with its own run id)."""
    from dagster._core.execution.api import execute_run as execute

    return execute(recon, run, instance, raise_on_error=False)


def ended_by_interrupt(result: ExecutionResult) -> bool:
    """Whether Dagster ended the run because a signal interrupted it."""
    from dagster._core.events import RunFailureReason

    return any(event.event_type == DagsterEventType.RUN_FAILURE and event.job_failure_data is not None
               and event.job_failure_data.failure_reason == RunFailureReason.UNEXPECTED_TERMINATION
               for event in result.all_events)
