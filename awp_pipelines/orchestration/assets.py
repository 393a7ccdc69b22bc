"""The one builder: packet → Dagster definitions. One asset per prompt (its compute runs one Attempt), one
blocking check per verifier item, one asset group, one asset job and one recovery sensor per packet.

`definitions.py`, `PacketComponent` and `awp run` all build through `packet_assets`.
"""

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from dagster import (
    AssetCheckEvaluation,
    AssetExecutionContext,
    AssetMaterialization,
    AssetObservation,
    AssetsDefinition,
    ConfigurableResource,
    Definitions,
    Failure,
    MaterializeResult,
    SensorDefinition,
    asset,
    define_asset_job,
)
from dagster._core.definitions.unresolved_asset_job_definition import UnresolvedAssetJobDefinition

from awp_pipelines import tags
from awp_pipelines.attempts import AttemptRecord
from awp_pipelines.catalog import Catalog
from awp_pipelines.lint import refuse_secrets
from awp_pipelines.orchestration.attempt_step import NEEDS_DAEMON, run_attempt, signal_stop, start_gate
from awp_pipelines.orchestration.binding import PacketBinding
from awp_pipelines.orchestration.metadata import check_results, record_metadata, unmet_summary
from awp_pipelines.orchestration.naming import job_name
from awp_pipelines.orchestration.packet_run_tag import tag_root_run
from awp_pipelines.orchestration.parallel import DEFAULT_PARALLEL, parallel_executor
from awp_pipelines.orchestration.resources import (
    RUNTIME_KEY,
    AwpRuntime,
    account_key,
    canonical,
    catalog_resources,
    provider_key,
)
from awp_pipelines.orchestration.sensors import recovery_sensor
from awp_pipelines.orchestration.translator import PacketTranslator
from awp_pipelines.packet import Packet, Prompt
from awp_pipelines.plan import PlanContext
from awp_pipelines.redact import Redactor, redact


@dataclass(frozen=True)
class CompiledPacket:
    binding: PacketBinding
    assets: list[AssetsDefinition]
    job: UnresolvedAssetJobDefinition
    sensor: SensorDefinition
    resources: Mapping[str, ConfigurableResource]

    @property
    def packet(self) -> Packet:
        return self.binding.packet

    def definitions(self) -> Definitions:
        return Definitions(assets=self.assets, jobs=[self.job], sensors=[self.sensor], resources=dict(self.resources))


def packet_assets(packet: Packet, catalog: Catalog, runtime: AwpRuntime | None = None,
                  translator: PacketTranslator | None = None,
                  plan_context: PlanContext | None = None, parallel: int = DEFAULT_PARALLEL) -> CompiledPacket:
    """Compile one packet. The plan is resolved here, once (with `plan_context`'s overrides, if any). The job
    runs up to `parallel` prompts at once (parallel.py), within the work-tree pools and account leases. A packet
    with a secret written in it is refused here as `awp run` refuses it, so the code location the UI and the
    daemon load fails with its file and line instead of storing the secret in its snapshots."""
    refuse_secrets(packet)
    translator = translator or PacketTranslator()
    keys = {translator.asset_key(packet, p): p.id for p in packet.prompts}
    binding = PacketBinding.resolve(packet, catalog, keys, plan_context)
    # The job snapshot keeps descriptions: a credential in a prompt body must not reach it.
    redactor = Redactor.for_catalog(catalog)
    assets = [_prompt_asset(binding, prompt, translator, redactor) for prompt in packet.prompts]
    job = define_asset_job(job_name(packet), selection=[a.key for a in assets],
                           tags={tags.PACKET: packet.name, **tags.WORKER_LOSS_ONLY},
                           description=f"Run every prompt of packet {packet.name}. {NEEDS_DAEMON}",
                           executor_def=parallel_executor(parallel))
    providers = {c.provider for chain in binding.chains.values() for c in chain.candidates()}
    accounts = {c.account for chain in binding.chains.values() for c in chain.candidates() if c.account}
    runtime = canonical(runtime or AwpRuntime())
    resources = {RUNTIME_KEY: runtime, **catalog_resources(catalog, providers, accounts)}
    sensor = recovery_sensor(binding, job_name(packet), runtime.state_root(packet.root))
    return CompiledPacket(binding, assets, job, sensor, resources)


def _prompt_asset(binding: PacketBinding, prompt: Prompt, translator: PacketTranslator,
                  redactor: Redactor) -> AssetsDefinition:
    packet = binding.packet
    key = translator.asset_key(packet, prompt)
    chain = binding.chains[prompt.id].candidates()
    # Each asset lists only what it uses: its chain's providers and accounts.
    uses = {RUNTIME_KEY, *(provider_key(c.provider) for c in chain),
            *(account_key(c.account) for c in chain if c.account)}

    @asset(key=key, deps=translator.deps(packet, prompt), group_name=translator.group_name(packet),
           description=redactor(translator.description(packet, prompt)),
           check_specs=[spec._replace(description=redactor(spec.description or "")) if spec.description else spec
                        for spec in translator.check_specs(packet, prompt)],
           required_resource_keys=uses, kinds=translator.kinds(packet, binding.plans[prompt.id]),
           pool=translator.pool(packet, prompt), code_version=translator.code_version(packet, prompt),
           metadata=translator.metadata(packet, prompt), tags=translator.tags(packet, prompt),
           owners=translator.owners(packet, prompt), output_required=False)
    def _attempt(context: AssetExecutionContext) -> Iterator[MaterializeResult]:
        skip = start_gate(context, binding, prompt)
        if skip is not None:  # not needed: nothing is materialized, and Dagster skips what follows
            context.log.info(f"prompt {prompt.id} does not run: {skip}")
            return
        with signal_stop():  # under `awp run`, a signal ends the Attempt in order, its record stored
            try:
                yield _run(context)
            except Failure:  # the Attempt's events are logged before the raise
                tag_root_run(context, binding)
                raise
            # After the yield the Attempt's materialization is stored: the root run shows the packet run's state.
            tag_root_run(context, binding)

    def _run(context: AssetExecutionContext) -> MaterializeResult:
        record, transcript, earlier, after = run_attempt(context, binding, prompt)
        # The state's reason may quote the agent (a blocked reason): redacted like the rest of the record.
        metadata = {**record_metadata(record, transcript, earlier, packet.root),
                    tags.AGENT_RUN_STATE: redact(after.text)}
        if record.result == "completed" and record.fact().done:
            # On the materialization alone: an output's metadata is stored twice, in STEP_OUTPUT too.
            context.add_asset_metadata(metadata)
            return MaterializeResult(check_results=check_results(record, packet.root))
        failure = attempt_failure(record)
        if record.result == "completed":
            # An iteration whose agent asked for more (or is blocked): its work exists, but the AgentRun goes
            # on, so the step fails and no downstream prompt starts in this run.
            context.log_event(AssetMaterialization(asset_key=key, metadata=metadata))
        else:
            # Not completed: the work product does not exist, so nothing is materialized. The Attempt is an
            # observation, and the checks it did evaluate are stored as failed evaluations.
            context.log_event(AssetObservation(asset_key=key, metadata=metadata, description=failure.description))
        for result in check_results(record, packet.root):
            context.log_event(AssetCheckEvaluation(asset_key=key, check_name=str(result.check_name),
                                                   passed=result.passed, metadata=result.metadata,
                                                   severity=result.severity, description=result.description,
                                                   blocking=True))
        raise failure

    return _attempt


def attempt_failure(record: AttemptRecord) -> Failure:
    """An Attempt that did not complete ends its step failed, with a one-line reason and its facts (not
    retried by Dagster: what comes next is the decision function's). Dagster still attaches the traceback
    of the raise under them; the description and metadata come first in the run's log."""
    failure = record.failure
    reason = redact(failure.message) if failure else unmet_summary(record)
    what = record.result.replace("_", " ")
    meta = {tags.RESULT: record.result, tags.ATTEMPT: record.identity.attempt_id,
            tags.FAILURE_CLASS: failure.failure_class if failure else None,
            tags.UNMET: unmet_summary(record).removeprefix("unmet: ") or None}
    return Failure(description=f"Attempt {record.identity.attempt_id} did not complete: {what}"
                   + (f" — {reason}" if reason else ""),
                   metadata={k: v for k, v in meta.items() if v}, allow_retries=False)
