"""The compute of a prompt asset: one Attempt, its identity counted from stored history, its target read
from the run's tags (so a sensor-launched retry, fallback or repair run needs nothing but tags)."""

from dagster import AssetExecutionContext, AssetKey, AssetObservation, DagsterInstance, Failure

from awp_pipelines import tags
from awp_pipelines.attempts import (
    AttemptIdentity,
    AttemptRecord,
    AttemptSpec,
    AttemptTarget,
    execute_attempt,
    repair_instructions,
)
from awp_pipelines.events import EventSink
from awp_pipelines.history import ATTEMPT_STARTED, agent_run_records, count_started_attempts
from awp_pipelines.naming import prompt_key
from awp_pipelines.packet import Packet, Prompt
from awp_pipelines.plan import Overrides, PlanContext, base_layers, plan_prompt
from awp_pipelines.providers.registry import adapter_for
from awp_pipelines.resources import RUNTIME_KEY, AwpRuntime
from awp_pipelines.tags import RunIntent, agent_run_id, attempt_id


def repair_text(instance: DagsterInstance, key: AssetKey, agent_run: str) -> str | None:
    """What the repair prompt carries, from the AgentRun's last stored record."""
    records = agent_run_records(instance, key, agent_run)
    return repair_instructions(AttemptRecord.model_validate(records[-1])) if records else None


def run_attempt(context: AssetExecutionContext, packet: Packet, prompt: Prompt) -> tuple[AttemptRecord, str]:
    runtime: AwpRuntime = getattr(context.resources, RUNTIME_KEY)
    catalog = runtime.catalog()
    intent = RunIntent.from_tags(context.run.tags)
    key = prompt_key(packet, prompt.id)
    packet_run = intent.packet_run or context.run.run_id[:8]
    agent_run = agent_run_id(packet_run, prompt.id)
    number = count_started_attempts(context.instance, key, agent_run) + 1
    identity = AttemptIdentity(attempt_id=attempt_id(agent_run, number), agent_run=agent_run, number=number,
                               packet=packet.name, packet_run=packet_run, prompt=prompt.id, mode=intent.mode,
                               parent_run=intent.parent_run, dagster_run=context.run.run_id)
    # Stored before the agent starts: the count survives a crash, so budgets never restart from memory.
    context.log_event(AssetObservation(asset_key=key, metadata={
        "awp/event": ATTEMPT_STARTED, "awp/agent_run": agent_run, "awp/attempt": identity.attempt_id,
        "awp/mode": intent.mode}))
    ctx = PlanContext(catalog=catalog, overrides=Overrides(provider=intent.provider, model=intent.model,
                                                           effort=intent.effort, profile=intent.profile))
    layers, _ = base_layers(packet, ctx)
    plan = plan_prompt(packet, prompt, layers, ctx)
    spec = catalog.providers.get(plan.provider)
    if spec is None:
        raise Failure(description=f"unknown provider '{plan.provider}'; known: {', '.join(catalog.providers)}",
                      allow_retries=False)
    target = AttemptTarget(provider=plan.provider, provider_kind=spec.kind,
                           account=intent.account or catalog.first_account(plan.accounts, plan.provider),
                           model=plan.model, effort=plan.effort,
                           reason=intent.reason or "primary target of the plan")
    events_file = (runtime.state_root(packet.root) / "events" / packet_run / prompt.id
                   / f"{identity.attempt_id}.jsonl")
    secrets = catalog.account_secrets(target.account)
    sink = EventSink(events_file, identity.attempt_id, secrets=secrets.values())
    attempt = AttemptSpec(packet=packet, prompt=prompt, plan=plan, identity=identity, target=target,
                          commit=runtime.commit, simulate=runtime.overlay_for(prompt.id) or prompt.front.simulate,
                          secret_env=secrets, repair_text=repair_text(context.instance, key, agent_run)
                          if intent.mode == "repair" else None)
    # Only the compute knows the attempt number (counted from history) and the account finally used:
    # it adds them to its own run's tags, so runs filter by attempt and account in the UI.
    known = {tags.ATTEMPT: identity.attempt_id, tags.AGENT_RUN: agent_run, tags.PROVIDER: target.provider,
             tags.MODEL: target.model, tags.ACCOUNT: target.account or ""}
    context.instance.add_run_tags(context.run.run_id, {k: tags.short(v) for k, v in known.items() if v})
    context.log.info(f"Attempt {identity.attempt_id}: {target.provider}/{target.model} ({intent.mode})")
    record = execute_attempt(attempt, adapter_for(spec), sink)
    context.log.info(f"Attempt {identity.attempt_id} ended {record.result}")
    return record, sink.transcript_markdown()
