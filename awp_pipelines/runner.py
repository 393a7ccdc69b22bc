"""`awp run` in process: each selected prompt becomes one Dagster run (one Attempt) of the packet's job,
on the embedded instance. No server, no daemon."""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from dagster import DagsterInstance, Definitions, ExecuteInProcessResult, JobDefinition

from awp_pipelines.catalog import Catalog
from awp_pipelines.compile import compile_packet
from awp_pipelines.history import agent_run_records, attempt_outcome
from awp_pipelines.naming import job_name, prompt_key
from awp_pipelines.packet import Packet, Prompt
from awp_pipelines.plan import Overrides, PromptPlan
from awp_pipelines.policy import Verdict, chain_of, decide, fact_of
from awp_pipelines.resources import RUNTIME_KEY, AwpRuntime, catalog_resources
from awp_pipelines.tags import RunIntent, agent_run_id


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
    decision: str = ""

    @property
    def completed(self) -> bool:
        return self.result == "completed"


@dataclass
class RunOptions:
    overrides: Overrides = field(default_factory=Overrides)
    keep_going: bool = False
    packet_run: str | None = None
    recover: bool = True  # retry, fallback and repair in process, as the sensors do with a daemon
    log_level: str = "CRITICAL"  # Dagster's console log; the full log is stored in the instance either way


def _quiet(level: str) -> dict[str, object]:
    return {"loggers": {"console": {"config": {"log_level": level}}}}


# A guard against a bug in the decision function, far above any budget a packet can declare.
_MAX_ATTEMPTS = 200


def new_packet_run_id() -> str:
    return "pr-" + secrets.token_hex(4)


def packet_definitions(packet: Packet, catalog: Catalog, runtime: AwpRuntime) -> Definitions:
    compiled = compile_packet(packet, catalog)
    return Definitions(assets=compiled.assets, jobs=[compiled.job],
                       resources={RUNTIME_KEY: runtime, **catalog_resources(catalog)})


def run_packet(packet: Packet, plans: list[PromptPlan], catalog: Catalog, runtime: AwpRuntime,
               instance: DagsterInstance, options: RunOptions,
               on_start: Callable[[Prompt], None] = lambda p: None,
               on_done: Callable[[PromptOutcome], None] = lambda o: None,
               on_decision: Callable[[Prompt, Verdict], None] = lambda p, v: None) -> list[PromptOutcome]:
    defs = packet_definitions(packet, catalog, runtime)
    job = defs.resolve_job_def(job_name(packet))
    packet_run = options.packet_run or new_packet_run_id()
    outcomes: list[PromptOutcome] = []
    unfinished: set[str] = set()
    for plan in plans:
        prompt = packet.prompt(plan.id)
        blockers = [d for d in packet.dependencies(prompt) if d in unfinished]
        if blockers:
            outcome = PromptOutcome(prompt.id, prompt.name, "blocked_by_dependency",
                                    message=f"waits for {', '.join(blockers)}")
        else:
            on_start(prompt)
            outcome = _run_agent_run(job, instance, catalog, packet, prompt, plan, packet_run, options,
                                     lambda v, p=prompt: on_decision(p, v))
        outcomes.append(outcome)
        on_done(outcome)
        if not outcome.completed:
            unfinished.add(prompt.id)
            if not options.keep_going:
                break
    return outcomes


def _run_agent_run(job: JobDefinition, instance: DagsterInstance, catalog: Catalog, packet: Packet,
                   prompt: Prompt, plan: PromptPlan, packet_run: str, options: RunOptions,
                   on_decision: Callable[[Verdict], None]) -> PromptOutcome:
    """Attempts of one AgentRun until the decision function says it is over. Each is its own Dagster run."""
    key = prompt_key(packet, prompt.id)
    # The resolved target goes on the run's tags at launch: filterable, and what per-account
    # concurrency limits of the queued run coordinator key on.
    intent = RunIntent(packet_run=packet_run, mode="run", provider=plan.provider, model=plan.model,
                       effort=plan.effort, account=catalog.first_account(plan.accounts, plan.provider),
                       reason="primary target of the plan", profile=options.overrides.profile)
    chain = chain_of(plan.provider, plan.model, plan.effort, catalog.accounts_of(plan.accounts, plan.provider),
                     plan.fallback)
    for _ in range(_MAX_ATTEMPTS):
        result = job.execute_in_process(instance=instance, asset_selection=[key], raise_on_error=False,
                                        tags=intent.to_tags(packet.name, prompt.id),
                                        run_config=_quiet(options.log_level))
        outcome = outcome_of(prompt, result, instance)
        if not options.recover or outcome.result == "error":
            return outcome
        records = agent_run_records(instance, key, agent_run_id(packet_run, prompt.id))
        verdict = decide([fact_of(r) for r in records], prompt.recovery, chain)
        on_decision(verdict)
        if verdict.terminal:
            outcome.decision = verdict.reason
            return outcome
        time.sleep(verdict.delay_ms / 1000)
        target = verdict.target
        intent = replace(intent, mode=verdict.action, reason=verdict.reason, parent_run=result.run_id,
                         **({"provider": target.provider, "model": target.model, "account": target.account,
                             "effort": target.effort} if target else {}))
    raise RuntimeError(f"prompt {prompt.id}: more than {_MAX_ATTEMPTS} attempts; the decision function "
                       "should have ended this AgentRun")


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
