"""The compute of a prompt asset: one Attempt. However the run was launched (the UI, a schedule, the
recovery sensor, GraphQL, `awp run`), the Attempt's identity comes from the stored history of its
AgentRun, and what it does (run, retry, fallback, repair) from the decision function.

A launcher that decided the launch (the sensor, `awp run`, `awp repair`) hands it over whole as the run's
config (attempt_config.py); the compute follows it when it is the next Attempt, and decides itself otherwise
(a re-execution from the UI, a materialization by hand). The packet run's history is read once, holding
the work tree's lease: the gate, the decision and the dead work all answer from that one read.

This module is the sequence; each step lives in a module of its own: launch_choice.py (the packet run, the
start gate, the launch), target_check.py (the chain and probes), work_trees.py (orphans, dead work, remote
trees, checkpoints), attempt_stops.py (stops), attempt_marks.py (progress, the started marker, tags, accounts).
"""

from __future__ import annotations

from dataclasses import replace

from dagster import DagsterExecutionInterruptedError

from awp_pipelines.core.decisions.agent_run import AgentRunStatus, agent_run_status
from awp_pipelines.core.decisions.operator_control import operator_folder
from awp_pipelines.core.decisions.stops import StopMarker
from awp_pipelines.core.engine import interrupts, progress
from awp_pipelines.core.engine.attempt_record import AttemptIdentity, AttemptRecord, AttemptTarget
from awp_pipelines.core.engine.attempts import AttemptSpec, control_setup, fault_pause, repair_instructions
from awp_pipelines.core.engine.progress import AttemptEnded, AttemptStarted
from awp_pipelines.core.engine.remote import trees_of
from awp_pipelines.core.engine.status_report import AttemptSummary
from awp_pipelines.core.packet.packet import Prompt
from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.core.records.agent_files import events_file as agent_events_file
from awp_pipelines.core.records.events import EventSink
from awp_pipelines.core.records.live_lines import LiveFeed, ticking
from awp_pipelines.core.records.redact import Redactor
from awp_pipelines.core.records.run_tags import attempt_id
from awp_pipelines.core.records.transcript import METADATA_TRANSCRIPT_CHARS
from awp_pipelines.orchestration.compile.attempt_config import AttemptConfig
from awp_pipelines.orchestration.compile.binding import PacketBinding
from awp_pipelines.orchestration.compute.attempt_marks import mark_started, mark_superseded, rest_account
from awp_pipelines.orchestration.compute.attempt_stops import honour_stop, store_stop
from awp_pipelines.orchestration.compute.launch_choice import (
    choose_launch,
    packet_run_of,
    start_gate,
    warn_without_daemon,
)
from awp_pipelines.orchestration.compute.step import Step
from awp_pipelines.orchestration.compute.target_check import probed, specs_for
from awp_pipelines.orchestration.compute.work_trees import checkpoints_to_restore, clear_dead_work
from awp_pipelines.orchestration.ledger.history import PacketRunHistory
from awp_pipelines.orchestration.ledger.lease import Lease, leased

Outcome = tuple[AttemptRecord, str, list[AttemptSummary], AgentRunStatus]


def run_attempt(step: Step, binding: PacketBinding, prompt: Prompt, config: AttemptConfig) -> Outcome | str:
    """One Attempt: its record, its transcript, the AgentRun's earlier Attempts, and the AgentRun's state once
    it ended (what the asset's metadata says, in the words of `awp status`); or, when it does not start
    (start_gate), the reason it is not needed. Holding the work tree's lease, the packet run's history is
    read once: no Attempt on this tree runs meanwhile, so what it says of the tree's dead Attempts holds."""
    fault_pause("before_attempt", prompt.id)  # a crash test's window: the step runs, its Attempt not yet
    packet_run = packet_run_of(step, binding)
    with leased(step.ledger, step.run_id, step.step_key, {"tree": binding.pools[prompt.id]},
                on_wait=step.log.info) as lease:
        history = step.ledger.history(packet_run, binding.keys)
        skip = start_gate(step, binding, prompt, history)
        if skip is not None:
            return skip
        return _attempt(step, binding, prompt, history, config, lease)


def _attempt(step: Step, binding: PacketBinding, prompt: Prompt, history: PacketRunHistory,
             config: AttemptConfig, lease: Lease) -> Outcome:
    """The Attempt, its work tree held: its launch, then its account's lease (the same Lease), then its agent."""
    packet_run = history.packet_run
    packet = binding.packet
    resource = step.resource
    plan = binding.plans[prompt.id]
    honour_stop(step, packet_run, history.stopped)
    # Past it, no stop stands (a stopped sensor launch failed, any other launch resumed): the stop marker is
    # read once per Attempt, with the history; only this compute's own stop (store_stop) changes it.
    stopped: StopMarker | None = None
    warn_without_daemon(step)
    launch, last, earlier, state = choose_launch(step, binding, prompt, history, config)
    launch, refusal = probed(step, binding, launch, state)
    # Its AgentRun's id from the stored history: a changed definition starts a new one (`….r2`).
    agent_run = history.agent_run_of(prompt.id, launch.number, binding.intents[prompt.id])
    identity = AttemptIdentity(attempt_id=attempt_id(agent_run, launch.number), agent_run=agent_run,
                               number=launch.number, packet=packet.name, packet_run=packet_run, prompt=prompt.id,
                               mode=launch.mode, parent_run=launch.parent_run, dagster_run=step.run_id)
    provider, account = specs_for(resource, binding, prompt.id, launch.target)
    target = AttemptTarget(provider=launch.target.provider, provider_kind=provider.kind,
                           account=launch.target.account,
                           model=launch.target.model or provider.default_model or plan.model,
                           effort=launch.target.effort, reason=launch.reason)
    events_file = agent_events_file(resource.state_root(packet.root), packet_run, prompt.id, identity.attempt_id)
    secrets = resource.secrets([target.account])
    # The agent's messages and tool calls reach the run's log while it works: batched, bounded lines. The
    # start marker already shows the Attempt started: the first batch waits a second, so an Attempt that ends
    # within it stores its lines and its end line as one event (each event a storage write).
    feed = LiveFeed(lambda lines: step.log.info("\n".join(lines)), first_after_s=1.0)
    # Every credential of the catalog (any account an agent or a verifier may print, not only this prompt's
    # chain) and of the prompt's chain is kept out of everything the Attempt hands out.
    chain_secrets = resource.secrets([c.account for c in binding.chains[prompt.id].candidates()])
    redactor = Redactor.for_catalog(binding.catalog).with_values(chain_secrets.values())
    sink = EventSink(events_file, identity.attempt_id, secrets=redactor.literals, root=packet.root, live=feed)
    continuing = launch.number > 1 and launch.mode != "run"
    attempt = AttemptSpec(packet=packet, prompt=prompt, plan=plan, identity=identity, target=target,
                          commit=resource.commit, verify_first=resource.verify_first,
                          simulate=resource.overlay_for(prompt.id) or prompt.front.simulate,
                          secret_env=secrets, spent_before=state.budget.packet_spent, budget=state.budget,
                          control=control_setup(packet.manifest.agent_control, resource.state_root(packet.root),
                                                identity, [f.mode for f in state.facts],
                                                last.control if last else None),
                          repair_text=repair_instructions(last, step.run.tags.get(tags.NOTE))
                          if last and launch.mode == "repair" else None,
                          redactor=redactor, agent_root=resource.state_root(packet.root),
                          operator=operator_folder(resource.state_root(packet.root), packet_run, prompt.id),
                          trees=trees_of(packet, packet_run), refusal=refusal)
    started = AttemptStarted(prompt.id, identity.attempt_id, launch.mode, target.provider, target.model,
                             target.account, launch.reason)
    progress.emit(started)  # its line reaches the run's log with the start marker (mark_started): one event
    lease.take("account", target.account)
    with ticking(sink.live):
        # Before this Attempt counts as started: what dead ones left on the trees is dealt with first.
        clear_dead_work(step, binding, history, prompt.id, attempt.trees)
        if continuing:  # read now: the work of a dead Attempt of this AgentRun was just saved
            attempt = replace(attempt, restore=checkpoints_to_restore(plan, agent_run, last))
        if state.superseded and launch.number == state.superseded + 1:
            mark_superseded(step, binding, prompt.id, history.attempt_of(prompt.id, state.superseded),
                            state.superseded, history.agent_runs[prompt.id].intents.get(state.superseded, ""))
        mark_started(step, binding, prompt.id, identity, launch, target, started.line(), events_file)
        record = resource.run_attempt(attempt, sink, cancel_on=(DagsterExecutionInterruptedError,),
                                     stop=interrupts.current())
        ended = AttemptEnded(prompt.id, identity.attempt_id, record.result)
        feed.note(ended.line())  # the run's log: with the agent's last lines, as ticking flushes them
    progress.emit(ended)
    stopped = store_stop(step, packet_run, record, stopped)
    if account is not None and target.account is not None:
        rest_account(step, target.account, account, record)
    # The state the asset metadata shows: a stop just stored (above) is part of it, as status reads it.
    after = agent_run_status(replace(state, facts=(*state.facts, record.fact()), started=launch.number, busy=False),
                             stopped=stopped)
    return record, sink.transcript_markdown(METADATA_TRANSCRIPT_CHARS), earlier, after
