"""Packet → Dagster definitions: one asset per prompt (its compute runs one Attempt), one blocking check
per verifier item, one asset group and one asset job per packet."""


import os
import re
from dataclasses import dataclass

from dagster import (
    AssetCheckSpec,
    AssetExecutionContext,
    AssetKey,
    AssetObservation,
    AssetsDefinition,
    DagsterInstance,
    Failure,
    MaterializeResult,
    MetadataValue,
    asset,
    define_asset_job,
)
from dagster._core.definitions.unresolved_asset_job_definition import UnresolvedAssetJobDefinition

from awp_pipelines.attempts import AttemptIdentity, AttemptRecord, AttemptSpec, AttemptTarget, execute_attempt
from awp_pipelines.catalog import Catalog
from awp_pipelines.events import EventSink
from awp_pipelines.history import agent_run_records, count_started_attempts
from awp_pipelines.metadata import check_results, record_metadata
from awp_pipelines.packet import Packet, Prompt
from awp_pipelines.plan import Overrides, PlanContext, base_layers, plan_prompt
from awp_pipelines.providers.registry import adapter_for
from awp_pipelines.resources import RUNTIME_KEY, AwpRuntime, catalog_resources
from awp_pipelines.tags import RunIntent, agent_run_id, attempt_id
from awp_pipelines.verifiers.items import contract_items

ATTEMPT_STARTED = "attempt_started"
_NAME = re.compile(r"[^A-Za-z0-9_]")


def dagster_name(text: str) -> str:
    """Dagster names allow [A-Za-z0-9_]: `authoring-packet` becomes `authoring_packet`."""
    return _NAME.sub("_", text)


def prompt_key(packet: Packet, prompt_id: str) -> AssetKey:
    return AssetKey([dagster_name(packet.name), dagster_name(prompt_id)])


def job_name(packet: Packet) -> str:
    return f"packet__{dagster_name(packet.name)}"


@dataclass(frozen=True)
class CompiledPacket:
    packet: Packet
    assets: list[AssetsDefinition]
    job: UnresolvedAssetJobDefinition


def repo_pools(packet: Packet) -> dict[str, str]:
    """prompt id → concurrency pool. Prompts whose target repos overlap (transitively) share one pool, so
    two agents never edit one work tree at once; prompts on disjoint repos may run in parallel."""
    parent: dict[str, str] = {}

    def find(name: str) -> str:
        while parent.setdefault(name, name) != name:
            name = parent[name]
        return name

    targets = {p.id: p.front.targets or [packet.default_repo or "packet"] for p in packet.prompts}
    for names in targets.values():
        for other in names[1:]:
            parent[find(other)] = find(names[0])
    return {pid: f"awp_{dagster_name(packet.name)}_{dagster_name(find(names[0]))}" for pid, names in targets.items()}


def compile_packet(packet: Packet, catalog: Catalog) -> CompiledPacket:
    group = dagster_name(packet.name)
    resource_keys = {RUNTIME_KEY, *catalog_resources(catalog)}
    pools = repo_pools(packet)
    assets = [_prompt_asset(packet, prompt, group, resource_keys, pools[prompt.id]) for prompt in packet.prompts]
    job = define_asset_job(job_name(packet), selection=[a.key for a in assets],
                           description=f"Run every prompt of packet {packet.name}.",
                           tags={"awp/packet": packet.name})
    return CompiledPacket(packet, assets, job)


def _prompt_asset(packet: Packet, prompt: Prompt, group: str, resource_keys: set[str],
                  pool: str) -> AssetsDefinition:
    key = prompt_key(packet, prompt.id)
    contract = prompt.front.verify
    checks = [AssetCheckSpec(name=item.check_name, asset=key, blocking=True, description=item.label)
              for item in (contract_items(contract) if contract is not None else [])]
    deps = [prompt_key(packet, dep) for dep in packet.dependencies(prompt)]

    @asset(key=key, deps=deps, group_name=group, description=prompt.body.strip() or prompt.name,
           check_specs=checks, required_resource_keys=resource_keys, kinds={"agent"}, pool=pool,
           metadata={"awp/prompt_file": MetadataValue.path(str(prompt.file)), "awp/prompt": prompt.name},
           tags={"awp/role": prompt.front.agent or "coder"})
    def _attempt(context: AssetExecutionContext) -> MaterializeResult:
        record, transcript = run_attempt(context, packet, prompt)
        metadata = record_metadata(record, transcript)
        if record.result in ("completed", "verification_failed"):
            # A failed blocking check fails the step after the materialization is stored.
            return MaterializeResult(metadata=metadata, check_results=check_results(record))
        context.log_event(AssetObservation(asset_key=key, metadata=metadata))
        failure = record.failure
        raise Failure(description=f"{record.result}: {failure.message if failure else ''}".strip(),
                      metadata={"awp/result": record.result, "awp/attempt": record.identity.attempt_id,
                                "awp/failure_class": failure.failure_class if failure else "none"},
                      allow_retries=False)

    return _attempt


def repair_text(instance: DagsterInstance, key: AssetKey, agent_run: str) -> str | None:
    """What the repair prompt carries: the last runtime error and the unmet items, from stored history."""
    records = agent_run_records(instance, key, agent_run)
    if not records:
        return None
    last = AttemptRecord.model_validate(records[-1])
    parts = []
    if last.failure or last.provider_failure:
        failure = last.failure or last.provider_failure
        parts.append(f"Last runtime error ({failure.failure_class}): {failure.message}")
    if last.verifier is not None and not last.verifier.passed:
        parts.append("Remaining verifier failures:\n\n" + last.verifier.unmet_text())
    return "\n\n".join(parts) or None


def account_secrets(catalog: Catalog, account: str | None) -> dict[str, str]:
    """The account's own credential, for the agent's environment and for redaction: nothing else secret."""
    spec = catalog.accounts.get(account) if account else None
    if spec is None or not spec.credential_env:
        return {}
    value = os.environ.get(spec.credential_env)
    return {spec.credential_env: value} if value else {}


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
                           account=intent.account or (plan.accounts[0] if plan.accounts else None),
                           model=plan.model, effort=plan.effort,
                           reason=intent.reason or "primary target of the plan")
    events_file = (runtime.state_root(packet.root) / "events" / packet_run / prompt.id
                   / f"{identity.attempt_id}.jsonl")
    secrets = account_secrets(catalog, target.account)
    sink = EventSink(events_file, identity.attempt_id, secrets=secrets.values())
    attempt = AttemptSpec(packet=packet, prompt=prompt, plan=plan, identity=identity, target=target,
                          commit=runtime.commit, simulate=runtime.overlay_for(prompt.id) or prompt.front.simulate,
                          secret_env=secrets, repair_text=repair_text(context.instance, key, agent_run)
                          if intent.mode == "repair" else None)
    context.log.info(f"Attempt {identity.attempt_id}: {target.provider}/{target.model} ({intent.mode})")
    record = execute_attempt(attempt, adapter_for(spec), sink)
    context.log.info(f"Attempt {identity.attempt_id} ended {record.result}")
    return record, sink.transcript_markdown()
