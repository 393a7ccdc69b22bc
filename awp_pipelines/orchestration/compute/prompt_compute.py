"""What a prompt asset's step does (assets.py builds the asset and imports this when the step runs, so a
code location's load imports none of the engine, the providers or the storages' SQL): one Attempt, under a
stop signal and a heartbeat, and its record as Dagster events."""

from __future__ import annotations

from collections.abc import Iterator

from dagster import (
    AssetCheckEvaluation,
    AssetExecutionContext,
    AssetMaterialization,
    AssetObservation,
    Failure,
    MaterializeResult,
)

from awp_pipelines.core.decisions.agent_run import AWP_RUN_LAUNCHES, SENSOR_LAUNCHES, AgentRunStatus, next_step
from awp_pipelines.core.engine.attempt_record import AttemptRecord
from awp_pipelines.core.engine.status_report import AttemptSummary
from awp_pipelines.core.packet.packet import Prompt
from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.core.records.redact import redact
from awp_pipelines.orchestration.compile.attempt_config import AttemptConfig
from awp_pipelines.orchestration.compile.binding import PacketBinding
from awp_pipelines.orchestration.compile.metadata import check_results, record_metadata, unmet_summary
from awp_pipelines.orchestration.compute.attempt_compute import run_attempt
from awp_pipelines.orchestration.compute.attempt_stops import signal_stop
from awp_pipelines.orchestration.compute.launch_choice import driven_by_awp_run
from awp_pipelines.orchestration.compute.step import Step
from awp_pipelines.orchestration.ledger.liveness import beating


def attempt_results(context: AssetExecutionContext, binding: PacketBinding, prompt: Prompt,
                    config: AttemptConfig) -> Iterator[MaterializeResult]:
    """The prompt asset's body: its step, handed the ledger of its instance."""
    yield from step_results(Step.of(context, binding), binding, prompt, config)


def step_results(step: Step, binding: PacketBinding, prompt: Prompt,
                 config: AttemptConfig) -> Iterator[MaterializeResult]:
    """The prompt's step: its Attempt's materialization, or its events and a Failure."""
    # Under `awp run`, a signal ends the Attempt in order, its record stored. The beat says the compute
    # lives, on whatever host (liveness.py): a silent one's run is failed and its slots freed.
    with signal_stop(), beating(step.ledger, step.run_id, step.step_key, binding.packet.name):
        outcome = run_attempt(step, binding, prompt, config)
        if isinstance(outcome, str):  # not needed: nothing is materialized, and Dagster skips what follows
            step.log.info(f"prompt {prompt.id} does not run: {outcome}")
            return
        record, transcript, earlier, after = outcome
        yield _result(step, binding, prompt, record, transcript, earlier, after)


def _result(step: Step, binding: PacketBinding, prompt: Prompt, record: AttemptRecord,
            transcript: str, earlier: list[AttemptSummary], after: AgentRunStatus) -> MaterializeResult:
    root, key = binding.packet.root, binding.key(prompt.id)
    coming = next_step(after, record.identity.number, _launcher(step, record.identity.packet_run))
    # The state's reason may quote the agent (a blocked reason): record_metadata redacts it.
    metadata = {**record_metadata(record, transcript, earlier, after.text, coming),
                **({tags.AGENT_RUN_CAUSE: after.cause} if after.cause else {})}
    if record.result == "completed" and record.fact().done:
        # On the materialization alone: an output's metadata is stored twice, in STEP_OUTPUT too.
        step.add_asset_metadata(metadata)
        return MaterializeResult(check_results=check_results(record, root))
    failure = attempt_failure(record, coming)
    if coming:  # the step's last line says what comes next, so an expected failure reads as expected
        step.log.info(f"{prompt.id}: {coming}")
    if record.result == "completed":
        # An iteration whose agent asked for more (or is blocked): its work exists, but the AgentRun goes
        # on, so the step fails and no downstream prompt starts in this run.
        step.log_event(AssetMaterialization(asset_key=key, metadata=metadata))
    else:
        # Not completed: the work product does not exist, so nothing is materialized. The Attempt is an
        # observation, and the checks it did evaluate are stored as failed evaluations.
        step.log_event(AssetObservation(asset_key=key, metadata=metadata, description=failure.description))
    for result in check_results(record, root):
        step.log_event(AssetCheckEvaluation(asset_key=key, check_name=str(result.check_name),
                                            passed=result.passed, metadata=result.metadata,
                                            severity=result.severity, description=result.description,
                                            blocking=True))
    raise failure


def _launcher(step: Step, packet_run: str) -> str:
    """Who launches the next Attempt: the `awp run` that drives this run (it noted itself), else the daemon."""
    if driven_by_awp_run(step.ledger, step.run_id):
        return AWP_RUN_LAUNCHES
    return SENSOR_LAUNCHES.format(packet_run=packet_run)


def attempt_failure(record: AttemptRecord, coming: str | None = None) -> Failure:
    """An Attempt that did not complete ends its step failed, with a one-line reason and its facts (not
    retried by Dagster: what comes next is the decision function's, and `coming` says it first). Dagster still
    attaches the traceback of the raise under them (docs/upstream.md §4); the description and metadata come
    first in the run's log."""
    failure = record.failure
    reason = redact(failure.message) if failure else unmet_summary(record)
    what = record.result.replace("_", " ")
    ended = f"Attempt {record.identity.attempt_id} did not complete: {what}" + (f" — {reason}" if reason else "")
    # The description names the Attempt, its result and why; the observation before it holds the rest. Only
    # what comes next is metadata here: Dagster stores a step failure's metadata twice (the step's failure,
    # and the run's failure quoting it).
    return Failure(description=f"{coming.split(' — ', 1)[0]}: {ended}" if coming else ended,
                   metadata={tags.NEXT: coming} if coming else None, allow_retries=False)
