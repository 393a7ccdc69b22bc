"""The one builder: packet → Dagster definitions. One asset per prompt (its compute runs one Attempt), one
blocking check per verifier item, one asset group, one asset job and one recovery sensor per packet.

`definitions.py`, `PacketComponent` and `awp run` all build through `packet_assets`.
"""

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dagster import (
    AssetExecutionContext,
    AssetsDefinition,
    ConfigurableResource,
    Definitions,
    MaterializeResult,
    SensorDefinition,
    define_asset_job,
    multi_asset,
)

from awp_pipelines.core.lint import refuse_secrets
from awp_pipelines.core.packet.packet import Packet, Prompt
from awp_pipelines.core.packet.providers_config import Catalog
from awp_pipelines.core.planning.plan import PacketPlan, PlanContext
from awp_pipelines.core.records.redact import Redactor
from awp_pipelines.dagster_compat.config_schema import shared_config_schema
from awp_pipelines.dagster_compat.tags import WORKER_LOSS_ONLY
from awp_pipelines.orchestration.attempt_config import AttemptConfig
from awp_pipelines.orchestration.binding import PacketBinding
from awp_pipelines.orchestration.compute.launch_choice import NEEDS_DAEMON
from awp_pipelines.orchestration.naming import job_name
from awp_pipelines.orchestration.resources import AwpResource, resource_key
from awp_pipelines.orchestration.sensors import recovery_sensor
from awp_pipelines.orchestration.step_executor import DEFAULT_PARALLEL, parallel_executor
from awp_pipelines.orchestration.translator import PacketTranslator, load_translator

# The schema Dagster would infer from a `config: AttemptConfig` argument, inferred once: per asset, that
# inference was the largest cost of loading 2,000 prompts.
ATTEMPT_CONFIG_SCHEMA = shared_config_schema(AttemptConfig)

if TYPE_CHECKING:
    from awp_pipelines.dagster_compat.runs import UnresolvedAssetJobDefinition


@dataclass(frozen=True)
class CompiledPacket:
    binding: PacketBinding
    assets: list[AssetsDefinition]
    job: "UnresolvedAssetJobDefinition"
    sensor: SensorDefinition
    resources: Mapping[str, ConfigurableResource]

    @property
    def packet(self) -> Packet:
        return self.binding.packet

    def definitions(self) -> Definitions:
        return Definitions(assets=self.assets, jobs=[self.job], sensors=[self.sensor], resources=dict(self.resources))


def packet_assets(packet: Packet, catalog: Catalog, runtime: AwpResource | None = None,
                  translator: PacketTranslator | str | None = None,
                  plan_context: PlanContext | None = None, parallel: int = DEFAULT_PARALLEL,
                  plan: PacketPlan | None = None, resource_name: str | None = None) -> CompiledPacket:
    """Compile one packet. The plan is resolved here, once (with `plan_context`'s overrides, if any), unless
    the caller resolved the whole packet's `plan` already (`awp run`). The job
    runs up to `parallel` prompts at once (parallel.py), within the work-tree pools and account leases. A packet
    with a secret written in it is refused here as `awp run` refuses it, so the code location the UI and the
    daemon load fails with its file and line instead of storing the secret in its snapshots. `runtime`: the
    resource's settings (the catalog's providers and accounts are added here); `translator`: a
    `PacketTranslator` or its dotted path; `resource_name`: the resource's key (default `awp_<packet>`, one per
    packet, so components with their own providers file load side by side). Packets given one `runtime` that
    already carries `catalog` and one `resource_name` share one resource (the code location does: Dagster binds
    every resource of a location to every asset, so 200 of them cost 200 x 2,000 bindings)."""
    refuse_secrets(packet)
    translator = load_translator(translator)
    binding = PacketBinding.of(packet, catalog, plan_context, translator, plan, resource_name or resource_key(packet))
    # The job snapshot keeps descriptions: a credential in a prompt body must not reach it.
    redactor = Redactor.for_catalog(catalog)
    resource = (runtime or AwpResource()).with_catalog(catalog)
    assets = [_prompt_asset(binding, prompt, translator, redactor) for prompt in packet.prompts]
    job = define_asset_job(job_name(packet), selection=[a.key for a in assets],
                           tags=WORKER_LOSS_ONLY,
                           description=f"Run every prompt of packet {packet.name}. {NEEDS_DAEMON}",
                           executor_def=parallel_executor(parallel))
    sensor = recovery_sensor(binding, job_name(packet), resource.state_root(packet.root))
    return CompiledPacket(binding, assets, job, sensor, {binding.resource: resource})


def _prompt_asset(binding: PacketBinding, prompt: Prompt, translator: PacketTranslator,
                  redactor: Redactor) -> AssetsDefinition:
    packet = binding.packet
    spec = binding.specs[prompt.id]
    key = spec.key
    checks = translator.get_check_specs(spec, packet, prompt)

    # The graph's edges are the packet's: each upstream prompt by the key the translator gave it. Skippable:
    # a prompt its packet run does not need ends with nothing materialized (start_gate).
    upstream = [binding.key(dep) for dep in packet.dependencies(prompt)]
    @multi_asset(name=key.to_python_identifier(), required_resource_keys={binding.resource},
                 config_schema=ATTEMPT_CONFIG_SCHEMA,
                 specs=[spec.replace_attributes(deps=[*spec.deps, *upstream], skippable=True,
                                                description=redactor(spec.description or ""))],
                 check_specs=[c._replace(description=redactor(c.description)) if c.description else c
                              for c in checks], pool=binding.pools[prompt.id])
    def _attempt(context: AssetExecutionContext) -> Iterator[MaterializeResult]:
        # The compute's modules (the engine, the providers, the storages' SQL) load when a step runs, not
        # with the code location.
        from awp_pipelines.orchestration.compute.prompt_compute import attempt_results

        config = AttemptConfig(**context.op_execution_context.op_config)
        yield from attempt_results(context, binding, prompt, config)

    return _attempt
