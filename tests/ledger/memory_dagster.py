"""What Dagster and its daemon do for AWP, played on a `MemoryLedger`, so a decision scenario runs the real compute
and the real recovery sensor with no Dagster run: a launcher creates a run (`launch`), the run's steps run the
prompt asset's real compute, handed the memory as their ledger (`compute/step.py`), in the packet's order, a step
skipped when an upstream step of the run did not materialize, as Dagster skips it (`execute`); the daemon ticks the
real recovery sensor (`recovery_tick`) and launches what it requests, with the sensor's tag (`tick`). The Attempts
run on the real engine and the simulated provider, on real git work trees."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from dagster import AssetKey, AssetMaterialization, AssetObservation, DagsterRunStatus, Failure, RunRequest

from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.dagster_compat.tags import SENSOR_NAME_TAG
from awp_pipelines.orchestration.assets import CompiledPacket
from awp_pipelines.orchestration.compile.attempt_config import AttemptConfig
from awp_pipelines.orchestration.compile.naming import recovery_sensor_name
from awp_pipelines.orchestration.compute.prompt_compute import step_results
from awp_pipelines.orchestration.compute.step import Step
from awp_pipelines.orchestration.ledger.memory_ledger import MemoryLedger
from awp_pipelines.orchestration.sensors.recovery import recovery_tick

LOG = logging.getLogger("awp.memory_dagster")


@dataclass
class MemoryDagster:
    compiled: CompiledPacket
    ledger: MemoryLedger = field(default_factory=MemoryLedger)
    cursor: str | None = None
    daemon_beat: float | None = None  # when the sensor daemon last beat (None: no daemon): its warning
    said: list[str] = field(default_factory=list)  # what the sensor logged
    _dying: bool = False

    @property
    def keys(self) -> Mapping[AssetKey, str]:
        return self.compiled.binding.keys

    def launch(self, prompts: list[str] | None = None, run_tags: Mapping[str, str] | None = None,
               run_config: Mapping[str, Any] | None = None) -> str:
        """A run of the packet's job (of `prompts`, else all of them), as the UI or a launcher creates it."""
        binding = self.compiled.binding
        keys = [binding.key(p) for p in prompts] if prompts else None
        return self.ledger.add_run(None, keys, DagsterRunStatus.STARTED, job_name=self.compiled.job.name,
                                   tags=dict(run_tags or {}), run_config=dict(run_config or {}))

    def execute(self, run_id: str, dies_after_commit: bool = False) -> DagsterRunStatus:
        """The run's steps, each the prompt's real compute on the memory; the run ends as Dagster ends it.
        `dies_after_commit`: its process is killed once its first Attempt committed, before its record is stored
        (what a `kill -9` there leaves: the start marker, the commit, no record, no later step); the run is failed,
        as the reaper fails it."""
        self._dying = dies_after_commit
        binding = self.compiled.binding
        run = self.ledger.runs[run_id].run
        held = {self.keys[k] for k in run.asset_selection} if run.asset_selection else set(self.keys.values())
        ended: dict[str, str] = {}
        for prompt in binding.packet.prompts:
            upstream = set(binding.packet.dependencies(prompt)) & held
            if prompt.id not in held or any(ended.get(p) != "materialized" for p in upstream):
                continue  # not selected, or an upstream step of this run did not materialize: skipped
            ended[prompt.id] = self._step(run_id, prompt.id)
            if dies_after_commit:
                break  # the process is gone: no step of the run goes on
        failed = "failed" in ended.values() or dies_after_commit
        status = DagsterRunStatus.FAILURE if failed else DagsterRunStatus.SUCCESS
        self.ledger.end_run(run_id, status)
        return status

    def _step(self, run_id: str, prompt_id: str) -> str:
        """One step, as the run holds it now (its tags as its first compute left them): `materialized`,
        `failed` (a Failure raised), or `skipped` (nothing to do: its packet run is finished)."""
        binding = self.compiled.binding
        key = binding.key(prompt_id)
        run = self.ledger.runs[run_id].run
        added: dict[str, Any] = {}
        step = Step(self.ledger, run, key.to_python_identifier(), self.compiled.resources[binding.resource], LOG,
                    lambda event: self._store(run_id, event), added.update, lambda: self.daemon_beat)
        op = (run.run_config.get("ops") or {}).get(key.to_python_identifier()) or {}
        try:
            results = list(step_results(step, binding, binding.packet.prompt(prompt_id),
                                        AttemptConfig(**(op.get("config") or {}))))
        except Failure:
            return "failed"
        for _ in results:  # what Dagster stores of a MaterializeResult: the step's materialization
            self._store(run_id, AssetMaterialization(asset_key=key, metadata=added))
        return "materialized" if results else "skipped"

    def _store(self, run_id: str, event: object) -> None:
        if self._dying and isinstance(event, AssetMaterialization | AssetObservation) and tags.RECORD in event.metadata:
            return  # the process died before it stored the record
        self.ledger.log_event(run_id, event)

    def tick(self, now: float | None = None) -> list[str]:
        """One tick of the recovery sensor; each run it requests launched (tagged as the daemon tags them) and
        executed. The run ids launched."""
        served = {self.compiled.packet.name: self.compiled.served}
        result = recovery_tick(self.ledger, served, self.cursor, self.said.append, now)
        self.cursor = result.cursor
        launched = []
        for request in result.run_requests or []:
            launched.append(self.launch_request(request))
        for run_id in launched:
            self.execute(run_id)
        return launched

    def launch_request(self, request: RunRequest) -> str:
        """A sensor's run request launched as the daemon launches it: its selection, tags and config, and the
        sensor's name as a tag."""
        prompts = [self.keys[k] for k in request.asset_selection or ()]
        return self.launch(prompts, {**request.tags, SENSOR_NAME_TAG: recovery_sensor_name(self.compiled.packet)},
                           request.run_config)

    def until_idle(self, ticks: int = 20) -> int:
        """Tick (time moving past every backoff) until a tick launches nothing: the ticks that launched."""
        for n in range(ticks):
            if not self.tick(time.time() + 3600 * (n + 1)):
                return n
        raise AssertionError(f"the sensor still launched after {ticks} ticks")

    def packet_run_of(self, run_id: str) -> str:
        return self.ledger.runs[run_id].run.tags.get(tags.PACKET_RUN, "")
