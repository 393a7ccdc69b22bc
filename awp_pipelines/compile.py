"""Packet → Dagster definitions: one asset per prompt (its compute runs one Attempt), one blocking check
per verifier item, one asset group and one asset job per packet."""


from dataclasses import dataclass

from dagster import (
    AssetCheckEvaluation,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetObservation,
    AssetsDefinition,
    Failure,
    MaterializeResult,
    MetadataValue,
    asset,
    define_asset_job,
)
from dagster._core.definitions.unresolved_asset_job_definition import UnresolvedAssetJobDefinition

from awp_pipelines.attempt_step import run_attempt
from awp_pipelines.catalog import Catalog
from awp_pipelines.metadata import check_results, record_metadata, unmet_summary
from awp_pipelines.naming import dagster_name, job_name, prompt_key
from awp_pipelines.packet import Packet, Prompt
from awp_pipelines.resources import RUNTIME_KEY, catalog_resources
from awp_pipelines.verifiers.items import contract_items


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
        if record.result == "completed":
            return MaterializeResult(metadata=metadata, check_results=check_results(record))
        # Not completed: the work product does not exist, so nothing is materialized. The Attempt is an
        # observation, and the checks it did evaluate are stored as failed evaluations (a repair sensor's input).
        context.log_event(AssetObservation(asset_key=key, metadata=metadata))
        for result in check_results(record):
            context.log_event(AssetCheckEvaluation(asset_key=key, check_name=result.check_name,
                                                   passed=result.passed, metadata=result.metadata,
                                                   severity=result.severity, description=result.description,
                                                   blocking=True))
        failure = record.failure
        reason = failure.message if failure else unmet_summary(record)
        raise Failure(description=f"{record.result}: {reason}".strip(),
                      metadata={"awp/result": record.result, "awp/attempt": record.identity.attempt_id,
                                "awp/failure_class": failure.failure_class if failure else "none"},
                      allow_retries=False)

    return _attempt
