"""What an Attempt leaves on its Dagster run as it goes: progress said into the run's log, the started marker
(with its claim and its account's use), the run's tags naming the Attempt and its commits, and the rest an
exhausted account takes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dagster import AssetObservation, Failure

from awp_pipelines.core.decisions.intent import superseded_status
from awp_pipelines.core.decisions.next_launches import Launch
from awp_pipelines.core.decisions.rotation import cooldown_for
from awp_pipelines.core.engine import progress
from awp_pipelines.core.engine.attempt_record import AttemptIdentity, AttemptRecord, AttemptTarget
from awp_pipelines.core.engine.progress import ProgressEvent
from awp_pipelines.core.packet.providers_config import AccountSpec
from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.orchestration.compile.binding import PacketBinding
from awp_pipelines.orchestration.compile.page_link import attempt_page_url
from awp_pipelines.orchestration.compute.step import Step
from awp_pipelines.orchestration.ledger.history import ATTEMPT_STARTED, marker_metadata
from awp_pipelines.orchestration.ledger.lease import fail_if_stopping
from awp_pipelines.orchestration.ledger.ledger import now_ms


def said(step: Step, event: ProgressEvent) -> None:
    """Into the run's log, and to an in-process listener (`awp run`, the SDK) as the value itself."""
    step.log.info(event.line())
    progress.emit(event)


def mark_started(step: Step, binding: PacketBinding, prompt_id: str,
                 identity: AttemptIdentity, launch: Launch, target: AttemptTarget, line: str,
                 events: Path | None = None) -> None:
    """Stored once the leases are held, just before the agent starts: the count survives a crash, so budgets
    never restart from memory, and a wait for a work tree or an account is no Attempt. Kept small (what an
    `interrupted` fact needs); the Attempt's record follows when it ends. Its description is the Attempt's
    start line (`line`), so the run's log shows it without an event row of its own."""
    fail_if_stopping(f"before Attempt {identity.attempt_id} started: none did")
    ledger = step.ledger
    holder = ledger.claim_attempt(identity.attempt_id, step.run_id)
    if holder is not None:  # a second worker of one run (a redelivered Celery task): no second agent
        raise Failure(description=f"Attempt {identity.attempt_id} is already started by {holder}: this process "
                      "starts no second one", allow_retries=False)
    if target.account is not None:  # counted as it starts: the next choice, in any process, already sees it
        ledger.record_use(target.account, now_ms())
    page = attempt_page_url(identity.attempt_id)
    marker: dict[str, Any] = {
        tags.PAGE: page,  # first: the asset page opens the running Attempt in one click
        tags.EVENT: ATTEMPT_STARTED, tags.ATTEMPT: identity.attempt_id, tags.ATTEMPT_NUMBER: launch.number,
        tags.MODE: launch.mode, tags.PROVIDER: target.provider, tags.MODEL: target.model,
        tags.ACCOUNT: target.account, tags.EFFORT: target.effort, tags.INTENT: binding.intents[prompt_id],
        # Where its events go as it runs: the page follows the Attempt from here until its record is stored.
        tags.EVENTS: str(events) if events is not None else None}
    step.log_event(AssetObservation(
        asset_key=binding.key(prompt_id),
        description=f"Attempt {launch.number} started ({launch.mode}), follow it at {page} ; its record follows "
        f"when it ends. {line}",
        metadata=marker_metadata(marker)))


def mark_superseded(step: Step, binding: PacketBinding, prompt_id: str, last: str, through: int,
                    stored: str) -> None:
    """The first Attempt of a new AgentRun of a changed prompt: the earlier AgentRun's end (Attempts up to
    `through`, started under the definition `stored`; `last`: the id of Attempt `through`) goes on the asset
    page, in the words of `awp status`."""
    ended = superseded_status(through, stored, binding.intents[prompt_id])
    step.log_event(AssetObservation(asset_key=binding.key(prompt_id),
                                    description=f"AgentRun up to Attempt {last}: {ended.text}",
                                    metadata={tags.AGENT_RUN_STATE: ended.text, tags.ATTEMPT: last}))


def rest_account(step: Step, name: str, account: AccountSpec, record: AttemptRecord) -> None:
    """Rest the account when the provider said it is exhausted (a rate limit with its reset time): the
    cooldown is stored in the instance, so every process and every later run honours it."""
    failure = record.provider_failure or record.failure
    if failure is not None:
        rest = cooldown_for(name, failure, account.cooldown_s, now_ms())
        if rest is not None:
            step.ledger.rest(rest)
            step.log.info(f"account {name} rests until {rest.until_ms // 1000} (epoch s): "
                             f"{rest.failure_class}")
