"""Which launch an Attempt follows: the packet run it belongs to, whether its prompt may start at all (its
upstream prompts, a stop the user asked for), and the launch itself (its launcher's decision, a repair asked
for by hand, or the decision function's next launch)."""

from __future__ import annotations

import time

from dagster import DagsterRun, Failure

from awp_pipelines.core.decisions.agent_run import DecisionInput
from awp_pipelines.core.decisions.next_launches import Launch, manual_launch, repair_launch
from awp_pipelines.core.engine.attempt_record import AttemptRecord
from awp_pipelines.core.engine.status_report import AttemptSummary
from awp_pipelines.core.packet.ids import check_id
from awp_pipelines.core.packet.packet import Prompt
from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.core.records.run_tags import agent_run_id
from awp_pipelines.orchestration.compile.attempt_config import AttemptConfig, decided_by_launcher
from awp_pipelines.orchestration.compile.binding import PacketBinding
from awp_pipelines.orchestration.compute.step import Step
from awp_pipelines.orchestration.ledger.history import (
    AgentRunHistory,
    PacketRunHistory,
    agent_run_truth,
    decision_inputs,
    own_packet_run,
    prompts_of_run,
)
from awp_pipelines.orchestration.ledger.ledger import Ledger

NEEDS_DAEMON = ("Retries, fallbacks and repairs are launched by the recovery sensor: they need "
                "dagster-daemon running (`dagster dev` starts it with the UI).")
_DAEMON_STALE_S = 120
# Runs this process joined to their packet run (run id → its packet run): a run's tags as its steps see them
# (`Step.run`) are those of its start, so each step of a run of several prompts wrote the same packet-run
# tag and note again (a storage write per step). They never change once added.
_TAGGED: dict[str, str] = {}
_DRIVEN: dict[str, bool] = {}  # run id → whether an `awp run` drives it (driven_by_awp_run)


def packet_run_of(step: Step, binding: PacketBinding) -> str:
    """The packet run this run belongs to: its tag, or a new one named after the run. Runs that hold
    several prompts carry only packet-level tags; each Attempt's identity is in its events."""
    run = step.run
    held = prompts_of_run(run, binding.keys)
    packet_run = run.tags.get(tags.PACKET_RUN) or _repair_target(step, binding, held) or own_packet_run(run)
    try:
        check_id(packet_run, "packet run id")  # it names folders under .awp/: a tag of ../.. is refused
    except ValueError as err:
        raise Failure(description=str(err), allow_retries=False) from None
    if run.run_id in _TAGGED:
        return packet_run
    # The packet's index lists it, and the run carries its tags.
    step.ledger.join_run(run, binding.packet.name, packet_run)
    if len(_TAGGED) > 256:  # a long-lived process: only its recent runs' steps gain from it
        _TAGGED.clear()
    _TAGGED[run.run_id] = packet_run
    return packet_run


def driven_by_awp_run(ledger: Ledger, run_id: str) -> bool:
    """Whether an `awp run` drives the run: it notes itself before the run exists, and never again, so the
    answer holds for the run's life and is asked of the storage once per run in a process (each compute
    asked two or three times: the daemon warning, the user's choice, who launches next)."""
    if run_id not in _DRIVEN:
        if len(_DRIVEN) > 256:
            _DRIVEN.clear()
        _DRIVEN[run_id] = bool(ledger.runners([run_id]))
    return _DRIVEN[run_id]


def _repair_target(step: Step, binding: PacketBinding, held: set[str]) -> str | None:
    """A single-prompt run tagged `awp/mode=repair` with no packet run repairs the prompt's latest one."""
    if step.run.tags.get(tags.MODE) != "repair" or len(held) != 1:
        return None
    latest = step.ledger.latest_history(binding.packet.name, binding.keys, next(iter(held)))
    return latest.packet_run if latest else None


def start_gate(step: Step, binding: PacketBinding, prompt: Prompt, history: PacketRunHistory) -> str | None:
    """Whether the prompt's first Attempt may start in its packet run, however the run was launched (a run of
    several prompts, a UI re-execution, a materialization by hand). A launch that continues the packet run
    on its own (the sensor's, `awp run`'s resume) needs its upstream prompts completed in the packet run (a
    Failure names them); a prompt the user chose (`chosen_by_user`) starts, a warning naming each unfinished
    upstream. A reason to skip is returned when an agent's `finish` ended the packet run: the step ends with
    nothing materialized and Dagster skips what follows. A dead Attempt that committed is adopted first."""
    step.ledger.adopt(binding, history)
    if prompt.id in history.agent_runs or step.run.tags.get(tags.IGNORE_DEPS) == "true":
        return None
    _, statuses = agent_run_truth(binding, history, [prompt.id], exclude_run=step.run_id)
    status = statuses[prompt.id]
    if status.finished_by is not None:
        return status.reason
    if status.held_by and chosen_by_user(step.ledger, step.run, binding):
        step.log.warning(f"prompt {prompt.id} starts as you selected it in packet run {history.packet_run}, "
                            f"though {status.reason}")
    elif status.held_by:
        raise Failure(description=f"prompt {prompt.id} does not start in packet run {history.packet_run}: "
                      f"{status.reason} (a prompt runs once its upstream prompts completed in its packet run; to "
                      f"run it anyway, launch it with the tag {tags.IGNORE_DEPS}=true)", allow_retries=False)
    return None


def chosen_by_user(ledger: Ledger, run: DagsterRun, binding: PacketBinding) -> bool:
    """A run of prompts the user picked (the UI's "Materialize selected", a launch of one asset): it has an
    asset selection short of the whole packet, and no launcher's marks — the recovery sensor hands its launches
    their decided launch as run config, `awp run` notes its runs' runner (and tags them awp/ignore_deps when
    its user chose the prompts)."""
    launched = decided_by_launcher(run.run_config) or driven_by_awp_run(ledger, run.run_id)
    return not launched and bool(run.asset_selection) and prompts_of_run(run, binding.keys) != set(
        binding.keys.values())


def choose_launch(step: Step, binding: PacketBinding, prompt: Prompt, history: PacketRunHistory,
                  config: AttemptConfig) -> tuple[Launch, AttemptRecord | None, list[AttemptSummary], DecisionInput]:
    """This Attempt's launch, the AgentRun's last record (what a repair or retry continues from), its earlier
    Attempts (the history table of this Attempt's record) and its state. The launch its launcher decided
    (the run's config) when it is the next Attempt; a single-prompt run tagged `awp/mode=repair` without one
    is a repair asked for by hand; anything else is decided here."""
    state = decision_inputs(binding, history, [prompt.id])[0]
    if state.chain.denied and not state.facts:  # a reviewer left only its coder's accounts: refused, not picked
        raise Failure(description=f"prompt {prompt.id}: {state.chain.denied}", allow_retries=False)
    agent_run = history.agent_runs.get(prompt.id, AgentRunHistory())
    last = agent_run.last_record
    earlier = agent_run.summaries(agent_run_id(history.packet_run, prompt.id), history.finished_runs(),
                                  state.started + 1)
    single = prompts_of_run(step.run, binding.keys) == {prompt.id}
    decided = config.launch(prompt.id, state.started + 1) if single else None
    if decided is not None:
        return decided, last, earlier, state
    by_hand = (repair_launch(state, step.run.tags.get(tags.NOTE))
               if single and step.run.tags.get(tags.MODE) == "repair" else None)
    over = None if single else state.spending().exhausted()
    if over is not None:  # a run of several prompts: the packet run's cap stops the ones not yet started
        raise Failure(description=f"budget_exhausted: {over}", allow_retries=False)
    return by_hand or manual_launch(state), last, earlier, state


def warn_without_daemon(step: Step) -> None:
    """Say so in the run when nothing will launch what comes after it."""
    if driven_by_awp_run(step.ledger, step.run_id):
        return  # awp run recovers in process
    beat = step.daemon_beat()
    if beat is None or time.time() - beat > _DAEMON_STALE_S:
        step.log.warning(f"No dagster-daemon is running on this instance. {NEEDS_DAEMON}")
