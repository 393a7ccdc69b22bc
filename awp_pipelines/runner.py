"""`awp run` in process: each selected prompt becomes one Dagster run (one Attempt) of the packet's job,
on the embedded instance. No server, no daemon."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass, field

from dagster import DagsterInstance, Definitions, ExecuteInProcessResult

from awp_pipelines.catalog import Catalog
from awp_pipelines.compile import compile_packet, prompt_key
from awp_pipelines.history import _text
from awp_pipelines.packet import Packet, Prompt
from awp_pipelines.plan import Overrides
from awp_pipelines.resources import RUNTIME_KEY, AwpRuntime, catalog_resources
from awp_pipelines.tags import RunIntent


@dataclass
class PromptOutcome:
    prompt: str
    name: str
    result: str
    dagster_run: str | None = None
    attempt: str | None = None
    failure_class: str | None = None
    message: str = ""
    metadata: dict[str, object] = field(default_factory=dict)

    @property
    def completed(self) -> bool:
        return self.result == "completed"


@dataclass
class RunOptions:
    overrides: Overrides = field(default_factory=Overrides)
    keep_going: bool = False
    packet_run: str | None = None


def new_packet_run_id() -> str:
    return "pr-" + secrets.token_hex(4)


def packet_definitions(packet: Packet, catalog: Catalog, runtime: AwpRuntime) -> Definitions:
    compiled = compile_packet(packet, catalog)
    return Definitions(assets=compiled.assets, jobs=[compiled.job],
                       resources={RUNTIME_KEY: runtime, **catalog_resources(catalog)})


def run_packet(packet: Packet, prompts: list[Prompt], catalog: Catalog, runtime: AwpRuntime,
               instance: DagsterInstance, options: RunOptions,
               on_start: Callable[[Prompt], None] = lambda p: None,
               on_done: Callable[[PromptOutcome], None] = lambda o: None) -> list[PromptOutcome]:
    defs = packet_definitions(packet, catalog, runtime)
    job = defs.resolve_job_def(compile_packet(packet, catalog).job.name)
    packet_run = options.packet_run or new_packet_run_id()
    intent = RunIntent(packet_run=packet_run, mode="run", provider=options.overrides.provider,
                       model=options.overrides.model, effort=options.overrides.effort)
    outcomes: list[PromptOutcome] = []
    unfinished: set[str] = set()
    for prompt in prompts:
        blockers = [d for d in packet.dependencies(prompt) if d in unfinished]
        if blockers:
            outcome = PromptOutcome(prompt.id, prompt.name, "blocked_by_dependency",
                                    message=f"waits for {', '.join(blockers)}")
        else:
            on_start(prompt)
            result = job.execute_in_process(instance=instance, asset_selection=[prompt_key(packet, prompt.id)],
                                            tags=intent.to_tags(packet.name, prompt.id), raise_on_error=False)
            outcome = outcome_of(prompt, result)
        outcomes.append(outcome)
        on_done(outcome)
        if not outcome.completed:
            unfinished.add(prompt.id)
            if not options.keep_going:
                break
    return outcomes


def outcome_of(prompt: Prompt, result: ExecuteInProcessResult) -> PromptOutcome:
    events = [*result.get_asset_materialization_events(), *result.get_asset_observation_events()]
    for event in reversed(events):
        meta = event.event_specific_data.materialization.metadata if event.is_step_materialization else \
            event.event_specific_data.asset_observation.metadata
        outcome = _text(meta.get("awp/result"))
        if outcome:
            message = ""
            if not result.success:
                failures = result.get_step_failure_events()
                message = failures[0].step_failure_data.error.message.strip() if failures else ""
            return PromptOutcome(prompt.id, prompt.name, str(outcome), result.run_id,
                                 _text(meta.get("awp/attempt")), _text(meta.get("awp/failure_class")),
                                 message.splitlines()[0] if message else "", dict(meta))
    failures = result.get_step_failure_events()
    error = failures[0].step_failure_data.error if failures and failures[0].step_failure_data else None
    message = error.message.strip().splitlines()[0] if error and error.message else "the run failed"
    return PromptOutcome(prompt.id, prompt.name, "error", result.run_id, message=message)
