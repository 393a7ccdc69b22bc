"""The compute of a prompt asset: one Attempt. However the run was launched (the UI, a schedule, the
recovery sensor, GraphQL, `awp run`), the Attempt's identity comes from the stored history of its
AgentRun, and what it does (run, retry, fallback, repair) from the decision function.

A launcher that decided the launch (the sensor, `awp run`, `awp repair`) hands it over whole as the run's
config (attempt_config.py); the compute follows it when it is the next Attempt, and decides itself otherwise
(a re-execution from the UI, a materialization by hand). The packet run's history is read once, holding
the work tree's lease: the gate, the decision and the dead work all answer from that one read.
"""

from __future__ import annotations

import time
from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace
from pathlib import Path
from typing import Any

from dagster import AssetExecutionContext, AssetObservation, DagsterExecutionInterruptedError, DagsterInstance, Failure

from awp_pipelines.core.decisions.agent_run import AgentRunStatus, agent_run_status
from awp_pipelines.core.decisions.next_launches import Launch, PromptState, manual_launch, repair_launch
from awp_pipelines.core.decisions.policy import Target, past_unavailable
from awp_pipelines.core.decisions.stops import StopMarker
from awp_pipelines.core.engine import interrupts, progress
from awp_pipelines.core.engine.attempts import (
    AttemptIdentity,
    AttemptRecord,
    AttemptSpec,
    AttemptTarget,
    control_setup,
    fault_pause,
    repair_instructions,
)
from awp_pipelines.core.engine.orphans import end_orphans
from awp_pipelines.core.engine.progress import AttemptEnded, AttemptNote, AttemptStarted, ProgressEvent
from awp_pipelines.core.engine.remote import RemoteTrees, trees_of
from awp_pipelines.core.engine.status_report import AttemptSummary
from awp_pipelines.core.packet.ids import check_id
from awp_pipelines.core.packet.packet import Prompt
from awp_pipelines.core.packet.providers_config import AccountSpec, ProviderSpec
from awp_pipelines.core.planning.plan import PromptPlan, WorkRepo
from awp_pipelines.core.planning.target_probe import probe
from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.core.records.agent_files import events_file as agent_events_file
from awp_pipelines.core.records.events import EventSink
from awp_pipelines.core.records.live_lines import LiveFeed, ticking
from awp_pipelines.core.records.redact import Redactor
from awp_pipelines.core.records.run_tags import agent_run_id, attempt_id
from awp_pipelines.core.records.transcript import METADATA_TRANSCRIPT_CHARS
from awp_pipelines.core.records.workspace import WorkspaceError, latest_checkpoint
from awp_pipelines.orchestration.account_store import AccountStore
from awp_pipelines.orchestration.adoption import adopt_committed
from awp_pipelines.orchestration.attempt_config import AttemptConfig
from awp_pipelines.orchestration.binding import PacketBinding
from awp_pipelines.orchestration.claims import claim_attempt
from awp_pipelines.orchestration.history import (
    ATTEMPT_STARTED,
    AgentRunHistory,
    PacketRunHistory,
    agent_run_truth,
    packet_run_history,
    prompt_states,
    prompts_of_run,
    with_attempt,
)
from awp_pipelines.orchestration.lease import Lease, fail_if_stopping, leased
from awp_pipelines.orchestration.manual_repair import latest_history
from awp_pipelines.orchestration.naming import dagster_name
from awp_pipelines.orchestration.reaper import save_unrecorded_work
from awp_pipelines.orchestration.resources import AwpResource, resource_key
from awp_pipelines.orchestration.stop_store import StopStore
from awp_pipelines.orchestration.storage import SENSOR_NAME_TAG

NEEDS_DAEMON = ("Retries, fallbacks and repairs are launched by the packet's recovery sensor: they need "
                "dagster-daemon running (`dagster dev` starts it with the UI).")
_DAEMON_STALE_S = 120


def packet_run_of(context: AssetExecutionContext, binding: PacketBinding) -> str:
    """The packet run this run belongs to: its tag, or a new one named after the run. Runs that hold
    several prompts carry only packet-level tags; each Attempt's identity is in its events."""
    run = context.run
    held = prompts_of_run(run, binding.keys)
    packet_run = run.tags.get(tags.PACKET_RUN) or _repair_target(context, binding, held) or f"pr-{run.run_id[:8]}"
    try:
        check_id(packet_run, "packet run id")  # it names folders under .awp/: a tag of ../.. is refused
    except ValueError as err:
        raise Failure(description=str(err), allow_retries=False) from None
    wanted = {tags.PACKET: binding.packet.name, tags.PACKET_RUN: packet_run}
    if len(held) > 1:
        wanted[tags.PROMPTS] = tags.short(",".join(sorted(held)))
    missing = {k: v for k, v in wanted.items() if run.tags.get(k) != v}
    if missing:
        context.instance.add_run_tags(run.run_id, missing)
    return packet_run


def _repair_target(context: AssetExecutionContext, binding: PacketBinding, held: set[str]) -> str | None:
    """A single-prompt run tagged `awp/mode=repair` with no packet run repairs the prompt's latest one."""
    if context.run.tags.get(tags.MODE) != "repair" or len(held) != 1:
        return None
    latest = latest_history(context.instance, binding, next(iter(held)))
    return latest.packet_run if latest else None


def signal_stop() -> AbstractContextManager[object]:
    """Under `awp run`, its Stop (interrupts.py) takes SIGINT and SIGTERM for the whole compute, in place of
    Dagster's handler, which raises them anywhere in it (mid-commit, mid-record): the Attempt then ends in
    order, `interrupted`, and its record is stored. Under a run worker there is none: Dagster's interrupt
    (a termination from the UI) cancels the Attempt (`cancel_on`)."""
    stop = interrupts.current()
    return stop.handling() if stop is not None else nullcontext()


def _store_stop(context: AssetExecutionContext, packet_run: str, record: AttemptRecord,
                stopped: StopMarker | None) -> StopMarker | None:
    """An Attempt the user stopped (terminated from the UI; a signal to `awp run`) stops its packet run, stored
    before its run ends: a sensor tick that sees the run ended already sees the stop. Returns the stop that
    stands after it: `stopped` (the one read with the history, for the compute's duration) unless it stored one."""
    failure = record.failure or record.provider_failure
    stop = interrupts.current()
    what = f"run {context.run.run_id[:8]} was stopped during Attempt {record.identity.attempt_id}"
    if failure is not None and failure.failure_class == "user_cancelled":
        return StopStore(context.instance).stop(packet_run, StopMarker(time.time(), "ui_cancel", what)).marker
    if stop is not None and stop.signum is not None:
        return StopStore(context.instance).stop(packet_run, StopMarker.from_signal(stop.signum, time.time(),
                                                                                   what)).marker
    return stopped


def _honour_stop(context: AssetExecutionContext, packet_run: str, marker: StopMarker | None) -> None:
    """A packet run the user stopped (`marker`, read with the history under the lease): the sensor's launch
    (requested before the stop) starts no Attempt; a launch by hand carrying the packet run (the UI,
    `awp run --packet-run`) resumes it."""
    if marker is None:
        return
    stops = StopStore(context.instance)
    if SENSOR_NAME_TAG in context.run.tags:
        raise Failure(description=f"packet run {packet_run} was {marker.line()}: no Attempt starts until the "
                      "user resumes it (`awp resume`, `awp run --packet-run`, or a launch from the UI)",
                      allow_retries=False)
    stops.resume(packet_run)
    context.log.info(f"packet run {packet_run} resumed (it was {marker.line()})")


def choose_launch(context: AssetExecutionContext, binding: PacketBinding, prompt: Prompt, history: PacketRunHistory,
                  config: AttemptConfig) -> tuple[Launch, AttemptRecord | None, list[AttemptSummary], PromptState]:
    """This Attempt's launch, the AgentRun's last record (what a repair or retry continues from), its earlier
    Attempts (the history table of this Attempt's record) and its state. The launch its launcher decided
    (the run's config) when it is the next Attempt; a single-prompt run tagged `awp/mode=repair` without one
    is a repair asked for by hand; anything else is decided here."""
    packet_run = history.packet_run
    state = prompt_states(binding, history, [prompt.id])[0]
    agent_run = history.agent_runs.get(prompt.id, AgentRunHistory())
    last = agent_run.last_record
    earlier = agent_run.summaries(agent_run_id(packet_run, prompt.id), history.finished_runs(), state.started + 1)
    single = prompts_of_run(context.run, binding.keys) == {prompt.id}
    decided = config.launch(prompt.id, state.started + 1) if single else None
    if decided is not None:
        return decided, last, earlier, state
    by_hand = (repair_launch(state, context.run.tags.get(tags.NOTE))
               if single and context.run.tags.get(tags.MODE) == "repair" else None)
    over = None if single else state.spending().exhausted()
    if over is not None:  # a run of several prompts: the packet run's cap stops the ones not yet started
        raise Failure(description=f"budget_exhausted: {over}", allow_retries=False)
    return by_hand or manual_launch(state), last, earlier, state


def start_gate(context: AssetExecutionContext, binding: PacketBinding, prompt: Prompt,
               history: PacketRunHistory) -> str | None:
    """Whether the prompt's first Attempt may start in its packet run, however the run was launched (a run of
    several prompts, a UI re-execution, a materialization by hand): its upstream prompts must be completed
    in the packet run (a Failure names them), unless the run is tagged `awp/ignore_deps`. A reason to skip
    is returned when an agent's `finish` ended the packet run: the step ends with nothing materialized and
    Dagster skips what follows. A dead Attempt that committed is adopted first: its work counts."""
    adopt_committed(context.instance, binding, history)
    if prompt.id in history.agent_runs or context.run.tags.get(tags.IGNORE_DEPS) == "true":
        return None
    _, statuses = agent_run_truth(binding, history, [prompt.id], exclude_run=context.run.run_id)
    status = statuses[prompt.id]
    if status.finished_by is not None:
        return status.reason
    if status.held_by:
        raise Failure(description=f"prompt {prompt.id} does not start in packet run {history.packet_run}: "
                      f"{status.reason} (a prompt runs once its upstream prompts completed in its packet run; to "
                      f"run it anyway, launch it with the tag {tags.IGNORE_DEPS}=true)", allow_retries=False)
    return None


# The last: the packet run's history with this Attempt in it (packet_run_tag.py reads no history again).
Outcome = tuple[AttemptRecord, str, list[AttemptSummary], AgentRunStatus, PacketRunHistory]


def run_attempt(context: AssetExecutionContext, binding: PacketBinding, prompt: Prompt,
                config: AttemptConfig) -> Outcome | str:
    """One Attempt: its record, its transcript, the AgentRun's earlier Attempts, and the AgentRun's state once
    it ended (what the asset's metadata says, in the words of `awp status`); or, when it does not start
    (start_gate), the reason it is not needed. Holding the work tree's lease, the packet run's history is
    read once: no Attempt on this tree runs meanwhile, so what it says of the tree's dead Attempts holds."""
    fault_pause("before_attempt", prompt.id)  # a crash test's window: the step runs, its Attempt not yet
    packet_run = packet_run_of(context, binding)
    step_key = context.get_step_execution_context().step.key
    with leased(context.instance, context.run.run_id, step_key, {"tree": binding.pools[prompt.id]},
                on_wait=context.log.info) as lease:
        history = packet_run_history(context.instance, packet_run, binding.keys)
        skip = start_gate(context, binding, prompt, history)
        if skip is not None:
            return skip
        return _attempt(context, binding, prompt, history, config, lease)


def _attempt(context: AssetExecutionContext, binding: PacketBinding, prompt: Prompt, history: PacketRunHistory,
             config: AttemptConfig, lease: Lease) -> Outcome:
    """The Attempt, its work tree held: its launch, then its account's lease (the same Lease), then its agent."""
    packet_run = history.packet_run
    packet = binding.packet
    resource: AwpResource = getattr(context.resources, resource_key(packet))
    plan = binding.plans[prompt.id]
    _honour_stop(context, packet_run, history.stopped)
    # Past it, no stop stands (a stopped sensor launch failed, any other launch resumed): the stop marker is
    # read once per Attempt, with the history; only this compute's own stop (_store_stop) changes it.
    stopped: StopMarker | None = None
    _warn_without_daemon(context)
    launch, last, earlier, state = choose_launch(context, binding, prompt, history, config)
    launch = _probed(context, resource, binding, launch, state)
    agent_run = agent_run_id(packet_run, prompt.id)
    identity = AttemptIdentity(attempt_id=attempt_id(agent_run, launch.number), agent_run=agent_run,
                               number=launch.number, packet=packet.name, packet_run=packet_run, prompt=prompt.id,
                               mode=launch.mode, parent_run=launch.parent_run, dagster_run=context.run.run_id)
    provider, account = _specs_for(resource, binding, prompt.id, launch.target)
    target = AttemptTarget(provider=launch.target.provider, provider_kind=provider.kind,
                           account=launch.target.account,
                           model=launch.target.model or provider.default_model or plan.model,
                           effort=launch.target.effort, reason=launch.reason)
    events_file = agent_events_file(resource.state_root(packet.root), packet_run, prompt.id, identity.attempt_id)
    secrets = resource.secrets([target.account])
    # The agent's messages and tool calls reach the run's log while it works: batched, bounded lines.
    feed = LiveFeed(lambda lines: context.log.info("\n".join(lines)))
    # Every credential of the catalog (any account an agent or a verifier may print, not only this prompt's
    # chain) and of the prompt's chain is kept out of everything the Attempt hands out.
    chain_secrets = resource.secrets([c.account for c in binding.chains[prompt.id].candidates()])
    redactor = Redactor.for_catalog(binding.catalog).with_values(chain_secrets.values())
    sink = EventSink(events_file, identity.attempt_id, secrets=redactor.literals, root=packet.root, live=feed)
    continuing = launch.number > 1 and launch.mode != "run"
    attempt = AttemptSpec(packet=packet, prompt=prompt, plan=plan, identity=identity, target=target,
                          commit=resource.commit, simulate=resource.overlay_for(prompt.id) or prompt.front.simulate,
                          secret_env=secrets, spent_before=state.budget.packet_spent,
                          control=control_setup(packet.manifest.agent_control, resource.state_root(packet.root),
                                                identity, [f.mode for f in state.facts],
                                                last.control if last else None),
                          repair_text=repair_instructions(last, context.run.tags.get(tags.NOTE))
                          if last and launch.mode == "repair" else None,
                          redactor=redactor, agent_root=resource.state_root(packet.root),
                          trees=trees_of(packet, packet_run))
    started = AttemptStarted(prompt.id, identity.attempt_id, launch.mode, target.provider, target.model,
                             target.account, launch.reason)
    progress.emit(started)  # its line reaches the run's log with the start marker (_mark_started): one event
    lease.take("account", target.account)
    with ticking(sink.live):
        # Before this Attempt counts as started: what dead ones left on the trees is dealt with first.
        _end_orphans(context, packet.root, plan.repos)
        _save_dead_work(context, binding, history, prompt.id)
        _sync_trees(context, attempt.trees, plan.repos)
        if continuing:  # read now: the work of a dead Attempt of this AgentRun was just saved
            attempt = replace(attempt, restore=_checkpoints_to_restore(plan, agent_run, last))
        _mark_started(context, binding, prompt.id, identity, launch, target, started.line())
        record = resource.run_attempt(attempt, sink, cancel_on=(DagsterExecutionInterruptedError,),
                                     stop=interrupts.current())
    _said(context, AttemptEnded(prompt.id, identity.attempt_id, record.result))
    stopped = _store_stop(context, packet_run, record, stopped)
    if account is not None and target.account is not None:
        _account_after(context, target.account, account, record)
    _tag_commits(context, record, single=prompts_of_run(context.run, binding.keys) == {prompt.id})
    # The state the asset metadata shows: a stop just stored (above) is part of it, as status reads it.
    after = agent_run_status(replace(state, facts=(*state.facts, record.fact()), started=launch.number, busy=False),
                             stopped=stopped)
    known = with_attempt(history, prompt.id, record, (context.run.run_id, launch.mode, launch.target), stopped)
    return record, sink.transcript_markdown(METADATA_TRANSCRIPT_CHARS), earlier, after, known


def _said(context: AssetExecutionContext, event: ProgressEvent) -> None:
    """Into the run's log, and to an in-process listener (`awp run`, the SDK) as the value itself."""
    context.log.info(event.line())
    progress.emit(event)


def _mark_started(context: AssetExecutionContext, binding: PacketBinding, prompt_id: str,
                  identity: AttemptIdentity, launch: Launch, target: AttemptTarget, line: str) -> None:
    """Stored once the leases are held, just before the agent starts: the count survives a crash, so budgets
    never restart from memory, and a wait for a work tree or an account is no Attempt. Kept small (what an
    `interrupted` fact needs); the Attempt's record follows when it ends. Its description is the Attempt's
    start line (`line`), so the run's log shows it without an event row of its own."""
    fail_if_stopping(f"before Attempt {identity.attempt_id} started: none did")
    holder = claim_attempt(context.instance, identity.attempt_id, context.run.run_id)
    if holder is not None:  # a second worker of one run (a redelivered Celery task): no second agent
        raise Failure(description=f"Attempt {identity.attempt_id} is already started by {holder}: this process "
                      "starts no second one", allow_retries=False)
    if target.account is not None:  # counted as it starts: the next choice, in any process, already sees it
        AccountStore(context.instance).record_use(target.account)
    marker: dict[str, Any] = {
        tags.EVENT: ATTEMPT_STARTED, tags.ATTEMPT: identity.attempt_id, tags.ATTEMPT_NUMBER: launch.number,
        tags.MODE: launch.mode, tags.PROVIDER: target.provider, tags.MODEL: target.model,
        tags.ACCOUNT: target.account, tags.EFFORT: target.effort}
    context.log_event(AssetObservation(
        asset_key=binding.key(prompt_id),
        description=f"Attempt {launch.number} started ({launch.mode}); its record follows when it ends. {line}",
        metadata={k: v for k, v in marker.items() if v}))
    if prompts_of_run(context.run, binding.keys) == {prompt_id}:
        _tag_single_prompt_run(context.instance, context.run.run_id, identity, target)


def _save_dead_work(context: AssetExecutionContext, binding: PacketBinding, history: PacketRunHistory,
                    prompt_id: str) -> None:
    """Holding the work tree's lease, no live Attempt is on it: an Attempt on these trees that started and has
    no record died (a killed run worker, under the daemon). Its partial work becomes its AgentRun's checkpoint
    before this Attempt edits the tree, as the next `awp run` does for a dead runner (reaper.py)."""
    for attempt in save_unrecorded_work(binding, history, history.packet_run, binding.sharing_pool(prompt_id)):
        context.log.warning(f"saved the partial work of Attempt {attempt}, whose process died, as its checkpoint")


def _sync_trees(context: AssetExecutionContext, trees: RemoteTrees | None, repos: list[WorkRepo]) -> None:
    """Remote repos (remote.py): this worker's clone stands on the packet run's branch, checkpoints fetched."""
    if trees is None:
        return
    try:
        tips = trees.sync(Path(r.path) for r in repos)
    except WorkspaceError as err:
        raise Failure(description=f"could not bring the work tree to the packet run's branch: {err}") from None
    for name, sha in tips.items():
        context.log.info(f"repo {name}: on {trees.branch} at {sha[:12]}")


def _end_orphans(context: AssetExecutionContext, packet_root: Path, repos: list[WorkRepo]) -> None:
    """Agents a killed runner left working in these trees (orphans.py): ended before this Attempt starts."""
    for orphan in end_orphans(packet_root, [r.path for r in repos]):
        context.log.warning(f"ended agent process {orphan.pid} (group {orphan.group}) of Attempt {orphan.attempt}: "
                            "its runner died and it was still working in this tree")


def _probed(context: AssetExecutionContext, resource: AwpResource, binding: PacketBinding, launch: Launch,
            state: PromptState) -> Launch:
    """A `probe: true` target is checked just before its Attempt starts on it (probe.py: doctor's checks,
    and the models endpoint of an HTTP provider). When it is not available the Attempt goes to the next
    target the decision gives (`past_unavailable`); each probe's answer goes into the Attempt's reason."""
    chain = binding.chains[launch.prompt]
    unavailable: set[tuple[str, str | None]] = set()
    notes: list[str] = []
    while (group := chain.group_of(launch.target)) is not None and group.probe:
        _specs_for(resource, binding, launch.prompt, launch.target)
        answer = probe(resource.catalog(), launch.target.provider, launch.target.account, model=launch.target.model)
        where = launch.target.provider + (f" ({launch.target.account})" if launch.target.account else "")
        if answer.ok:
            notes.append(f"probe of {where}: available ({answer.detail})")
            break
        unavailable.add((launch.target.provider, launch.target.account))
        notes.append(f"probe of {where}: unavailable ({answer.detail})")
        nxt = past_unavailable(chain, launch.target, unavailable, state.accounts)
        if nxt is None:
            notes.append("no other target left: trying it anyway")
            break
        launch = replace(launch, target=nxt.target)
    for note in notes:
        _said(context, AttemptNote(launch.prompt, launch.number, note))
    return replace(launch, reason="; ".join([launch.reason, *notes])) if notes else launch


def _checkpoints_to_restore(plan: PromptPlan, agent_run: str, last: AttemptRecord | None) -> dict[str, str]:
    """The AgentRun's newest checkpoint per repo: the last record's partial work, or that of a later
    Attempt whose process died before its record (the reaper saved it)."""
    since = last.identity.number if last else 1
    found = {}
    for repo in plan.repos:
        try:
            sha = latest_checkpoint(repo.path, agent_run, since)
        except WorkspaceError:
            continue
        if sha:
            found[repo.name] = sha
    return found


def _warn_without_daemon(context: AssetExecutionContext) -> None:
    """Say so in the run when nothing will launch what comes after it."""
    if context.run.tags.get("user", "").startswith("awp run"):
        return  # awp run recovers in process
    beat = context.instance.get_daemon_heartbeats().get("SENSOR")
    if beat is None or time.time() - beat.timestamp > _DAEMON_STALE_S:
        context.log.warning(f"No dagster-daemon is running on this instance. {NEEDS_DAEMON}")


def _specs_for(resource: AwpResource, binding: PacketBinding, prompt_id: str,
               target: Target) -> tuple[ProviderSpec, AccountSpec | None]:
    """The provider and account of a launch's target, as the resource holds them: only a target of the
    prompt's own chain (its plan and fallback) runs it."""
    chain = binding.chains[prompt_id].candidates()
    if all(c.provider != target.provider for c in chain):
        raise Failure(description=f"provider '{target.provider}' is not among this prompt's targets (its plan "
                      "and fallback chain); launch it with a target of its own chain", allow_retries=False)
    if target.account and all(c.account != target.account for c in chain):
        raise Failure(description=f"account '{target.account}' is not among this prompt's accounts",
                      allow_retries=False)
    return resource.provider(target.provider), resource.account(target.account)


def _account_after(context: AssetExecutionContext, name: str, account: AccountSpec, record: AttemptRecord) -> None:
    """Rest the account when the provider said it is exhausted (a rate limit with its reset time): the
    cooldown is stored in the instance, so every process and every later run honours it."""
    store = AccountStore(context.instance)
    failure = record.provider_failure or record.failure
    if failure is not None:
        rest = store.record_failure(name, failure, account.cooldown_s)
        if rest is not None:
            context.log.info(f"account {name} rests until {rest.until_ms // 1000} (epoch s): "
                             f"{rest.failure_class}")


def _tag_commits(context: AssetExecutionContext, record: AttemptRecord, single: bool) -> None:
    """The run names the commits it made, so the Runs page filters by sha: `awp/commit.<repo>` = the full sha
    (`awp/commit.<prompt>.<repo>` in a run of several prompts: no tag names another prompt's work)."""
    made = {c.repo: c.sha for c in record.commits if c.sha}
    prefix = tags.COMMIT if single else f"{tags.COMMIT}.{dagster_name(record.identity.prompt)}"
    if made:
        context.instance.add_run_tags(context.run.run_id, {f"{prefix}.{dagster_name(repo)}": sha
                                                           for repo, sha in made.items()})


def _tag_single_prompt_run(instance: DagsterInstance, run_id: str, identity: AttemptIdentity,
                           target: AttemptTarget) -> None:
    """A run that holds one prompt is that prompt's Attempt: its tags say which, so runs filter by it."""
    known = {tags.PROMPT: identity.prompt, tags.ATTEMPT: identity.attempt_id, tags.MODE: identity.mode,
             tags.PROVIDER: target.provider, tags.MODEL: target.model, tags.ACCOUNT: target.account or ""}
    instance.add_run_tags(run_id, {k: tags.short(v) for k, v in known.items() if v})
