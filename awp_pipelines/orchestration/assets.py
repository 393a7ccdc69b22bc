"""The one builder: packet → Dagster definitions. One asset per prompt (its compute runs one Attempt), one
blocking check per verifier item, one asset group and one asset job per packet; one recovery sensor for the
packets of a code location (`location_definitions`), or its own for a packet alone (`CompiledPacket.definitions`).

`definitions.py`, `PacketComponent` and `awp run` all build through `packet_assets`.
"""

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
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

from awp_pipelines.core.lint import refuse_broken_graph, refuse_secrets
from awp_pipelines.core.packet.packet import Packet, Prompt
from awp_pipelines.core.packet.providers_config import Catalog
from awp_pipelines.core.planning.plan import PacketPlan, PlanContext, build_plan
from awp_pipelines.core.planning.selection import Selection, nothing_selected
from awp_pipelines.core.records.redact import Redactor
from awp_pipelines.dagster_compat.config_schema import shared_config_schema
from awp_pipelines.dagster_compat.tags import WORKER_LOSS_ONLY
from awp_pipelines.orchestration.compile.attempt_config import AttemptConfig
from awp_pipelines.orchestration.compile.binding import PacketBinding
from awp_pipelines.orchestration.compile.naming import RECOVERY_SENSOR, job_name, recovery_sensor_name
from awp_pipelines.orchestration.compile.translator import PacketTranslator, load_translator
from awp_pipelines.orchestration.compute.launch_choice import NEEDS_DAEMON
from awp_pipelines.orchestration.compute.resources import AwpResource, resource_key
from awp_pipelines.orchestration.compute.step_executor import DEFAULT_PARALLEL, parallel_executor
from awp_pipelines.orchestration.sensors.recovery import ServedPacket, recovery_sensor

# The schema Dagster would infer from a `config: AttemptConfig` argument, inferred once: per asset, that
# inference was the largest cost of loading 2,000 prompts.
ATTEMPT_CONFIG_SCHEMA = shared_config_schema(AttemptConfig)

if TYPE_CHECKING:
    from awp_pipelines.dagster_compat.execution import UnresolvedAssetJobDefinition


@dataclass(frozen=True)
class CompiledPacket:
    binding: PacketBinding
    assets: list[AssetsDefinition]
    job: "UnresolvedAssetJobDefinition"
    resources: Mapping[str, ConfigurableResource]
    state_root: Path  # holds the packet's runner lock (`awp run`'s state dir)

    @property
    def packet(self) -> Packet:
        return self.binding.packet

    @property
    def served(self) -> ServedPacket:
        return ServedPacket(self.binding, self.job, self.state_root)

    @cached_property
    def sensor(self) -> SensorDefinition:
        """The packet's own recovery sensor, for a packet alone in its definitions (built when first asked: a
        code location of many packets has one sensor for them all instead)."""
        return recovery_sensor([self.served], recovery_sensor_name(self.packet))

    def definitions(self, with_sensor: bool = True) -> Definitions:
        """The packet alone, with its own recovery sensor (`with_sensor=False`: the caller adds one for several)."""
        return Definitions(assets=self.assets, jobs=[self.job], sensors=[self.sensor] if with_sensor else [],
                           resources=dict(self.resources))


def location_definitions(compiled: Sequence[CompiledPacket]) -> Definitions:
    """Several packets in one code location: their assets, jobs and resources, and ONE recovery sensor for them
    all (the daemon's cost per sensor tick made one sensor per packet most of a core at 200 packets)."""
    sensor = recovery_sensor([c.served for c in compiled], RECOVERY_SENSOR)
    return Definitions.merge(*(c.definitions(with_sensor=False) for c in compiled), Definitions(sensors=[sensor]))


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
    if not packet.prompts:  # a job of no assets is no job: say so, as `awp run` does, not a TypeError of Dagster's
        raise nothing_selected(packet, Selection(), None, {})
    translator = load_translator(translator)
    plan = plan or build_plan(packet, plan_context or PlanContext(catalog=catalog))
    refuse_broken_graph(packet, catalog, plan)  # an unknown or circular depends_on: its file and line, no KeyError
    binding = PacketBinding.of(packet, catalog, plan_context, translator, plan, resource_name or resource_key(packet))
    # The job snapshot keeps descriptions: a credential in a prompt body must not reach it.
    redactor = Redactor.for_catalog(catalog)
    resource = (runtime or AwpResource()).with_catalog(catalog)
    assets = [_prompt_asset(binding, prompt, translator, redactor) for prompt in packet.prompts]
    job = define_asset_job(job_name(packet), selection=[a.key for a in assets],
                           tags=WORKER_LOSS_ONLY,
                           description=f"Run every prompt of packet {packet.name}. {NEEDS_DAEMON}",
                           executor_def=parallel_executor(parallel))
    return CompiledPacket(binding, assets, job, {binding.resource: resource}, resource.state_root(packet.root))


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
