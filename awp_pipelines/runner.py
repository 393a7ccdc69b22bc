"""`awp run` in process: each selected prompt becomes one Dagster run (one Attempt) of the packet's job,
on the embedded instance. No server, no daemon."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass, field

from dagster import DagsterInstance, Definitions, ExecuteInProcessResult

from awp_pipelines.catalog import Catalog
from awp_pipelines.compile import compile_packet, prompt_key
from awp_pipelines.history import attempt_outcome
from awp_pipelines.packet import Packet, Prompt
from awp_pipelines.plan import Overrides, PromptPlan
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
    log_level: str = "CRITICAL"  # Dagster's console log; the full log is stored in the instance either way


def _quiet(level: str) -> dict[str, object]:
    return {"loggers": {"console": {"config": {"log_level": level}}}}


def new_packet_run_id() -> str:
    return "pr-" + secrets.token_hex(4)


def packet_definitions(packet: Packet, catalog: Catalog, runtime: AwpRuntime) -> Definitions:
    compiled = compile_packet(packet, catalog)
    return Definitions(assets=compiled.assets, jobs=[compiled.job],
                       resources={RUNTIME_KEY: runtime, **catalog_resources(catalog)})


def run_packet(packet: Packet, plans: list[PromptPlan], catalog: Catalog, runtime: AwpRuntime,
               instance: DagsterInstance, options: RunOptions,
               on_start: Callable[[Prompt], None] = lambda p: None,
               on_done: Callable[[PromptOutcome], None] = lambda o: None) -> list[PromptOutcome]:
    defs = packet_definitions(packet, catalog, runtime)
    job = defs.resolve_job_def(compile_packet(packet, catalog).job.name)
    packet_run = options.packet_run or new_packet_run_id()
    outcomes: list[PromptOutcome] = []
    unfinished: set[str] = set()
    for plan in plans:
        prompt = packet.prompt(plan.id)
        # The resolved target goes on the run's tags at launch: filterable, and what per-account
        # concurrency limits of the queued run coordinator key on.
        intent = RunIntent(packet_run=packet_run, mode="run", provider=plan.provider, model=plan.model,
                           effort=plan.effort, account=plan.accounts[0] if plan.accounts else None,
                           reason="primary target of the plan")
        blockers = [d for d in packet.dependencies(prompt) if d in unfinished]
        if blockers:
            outcome = PromptOutcome(prompt.id, prompt.name, "blocked_by_dependency",
                                    message=f"waits for {', '.join(blockers)}")
        else:
            on_start(prompt)
            result = job.execute_in_process(instance=instance, asset_selection=[prompt_key(packet, prompt.id)],
                                            tags=intent.to_tags(packet.name, prompt.id), raise_on_error=False,
                                            run_config=_quiet(options.log_level))
            outcome = outcome_of(prompt, result, instance)
        outcomes.append(outcome)
        on_done(outcome)
        if not outcome.completed:
            unfinished.add(prompt.id)
            if not options.keep_going:
                break
    return outcomes


def outcome_of(prompt: Prompt, result: ExecuteInProcessResult, instance: DagsterInstance) -> PromptOutcome:
    """Read back what the stored history says about the run, not what the in-memory result holds."""
    meta = attempt_outcome(instance, result.run_id)
    if meta is None:
        failures = result.get_step_failure_events()
        error = failures[0].step_failure_data.error if failures and failures[0].step_failure_data else None
        message = error.message.strip().splitlines()[0] if error and error.message else "the run failed"
        return PromptOutcome(prompt.id, prompt.name, "error", result.run_id, message=message)
    outcome = str(meta["awp/result"])
    return PromptOutcome(prompt.id, prompt.name, outcome, result.run_id, _opt(meta.get("awp/attempt")),
                         _opt(meta.get("awp/failure_class")), _explain(outcome, meta), meta)


def _opt(value: object) -> str | None:
    return None if value in (None, "none") else str(value)


def _explain(outcome: str, meta: dict[str, object]) -> str:
    record = meta.get("awp/record")
    if not isinstance(record, dict) or outcome == "completed":
        return ""
    if outcome == "verification_failed" and record.get("verifier"):
        unmet = [i["label"] + (f" ({i['details'][0]})" if i["details"] else "")
                 for i in record["verifier"]["items"] if not i["passed"]]
        return "unmet: " + "; ".join(unmet)
    failure = record.get("failure") or {}
    return f"{failure.get('failure_class', 'failure')}: {failure.get('message', '')}".strip()
