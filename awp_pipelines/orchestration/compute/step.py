"""What a prompt's compute knows of the step it runs in: its run, its step key, the resource that runs the Attempt,
the `Ledger` it is handed, and where its log lines and events go. The asset's body makes one from Dagster's context
(`Step.of`); a test makes one on a `MemoryLedger`, whose `log_event` stores the step's events as Dagster stores
them, so the same compute decides and records an Attempt with no Dagster run."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from dagster import AssetCheckEvaluation, AssetExecutionContext, AssetMaterialization, AssetObservation, DagsterRun

from awp_pipelines.orchestration.compile.binding import PacketBinding
from awp_pipelines.orchestration.compute.resources import AwpResource, resource_key
from awp_pipelines.orchestration.ledger.factory import ledger_of
from awp_pipelines.orchestration.ledger.ledger import Ledger

StepEvent = AssetMaterialization | AssetObservation | AssetCheckEvaluation


class StepLog(Protocol):
    """The step's log (Dagster's log manager, or a `logging.Logger`)."""

    def info(self, msg: str) -> Any: ...

    def warning(self, msg: str) -> Any: ...


@dataclass(frozen=True)
class Step:
    ledger: Ledger
    run: DagsterRun
    step_key: str
    resource: AwpResource
    log: StepLog
    log_event: Callable[[StepEvent], None]  # an event of the step's own, stored in its run's log
    add_asset_metadata: Callable[[Mapping[str, Any]], None]  # the step's materialization's metadata
    daemon_beat: Callable[[], float | None]  # when the sensor daemon last beat on the instance (epoch s)

    @property
    def run_id(self) -> str:
        return self.run.run_id

    @classmethod
    def of(cls, context: AssetExecutionContext, binding: PacketBinding) -> Step:
        """The step of a prompt asset's compute, handed the ledger of its instance."""
        instance = context.instance

        def daemon_beat() -> float | None:
            beat = instance.get_daemon_heartbeats().get("SENSOR")
            return beat.timestamp if beat is not None else None

        resource = getattr(context.resources, binding.resource or resource_key(binding.packet))
        return cls(ledger_of(instance), context.run, context.get_step_execution_context().step.key, resource,
                   context.log, context.log_event, context.add_asset_metadata, daemon_beat)
