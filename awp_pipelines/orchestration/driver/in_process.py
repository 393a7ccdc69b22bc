"""`awp run` in process: the daemon's path without a daemon.

It launches the selected prompts as one run of the packet's job (as "Materialize all" does; Dagster's
deps order them), then asks `next_launches` — the function the recovery sensor asks — what comes next,
and executes each launch as its own run, until nothing is left. Runs go to the same instance and carry
the code location's repository tag and `user: awp run`, so the UI lists them with the job's runs.
"""

from __future__ import annotations

import logging
import os
import secrets
import signal
import time
import uuid
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dagster import (
    DagsterInstance,
    InitLoggerContext,
    JobDefinition,
    logger,
)

from awp_pipelines.core.decisions.next_launches import Launch, Outlook, next_launches
from awp_pipelines.core.decisions.stops import StopMarker
from awp_pipelines.core.engine import interrupts, outage
from awp_pipelines.core.engine.attempt_record import AttemptRecord
from awp_pipelines.core.engine.interrupts import Interrupted
from awp_pipelines.core.engine.progress import LaunchDecided, LaunchWaiting, Listener, listening
from awp_pipelines.core.packet.errors import StorageUnavailable
from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.dagster_compat.execution import ended_by_interrupt
from awp_pipelines.dagster_compat.log_mirrors import keep_log_mirrors_out_of_the_terminal_group
from awp_pipelines.dagster_compat.tags import REPOSITORY_TAG
from awp_pipelines.orchestration.assets import CompiledPacket
from awp_pipelines.orchestration.compile.attempt_config import launch_run_config
from awp_pipelines.orchestration.compile.binding import PacketBinding
from awp_pipelines.orchestration.compute.interrupted_work import save_unrecorded_work
from awp_pipelines.orchestration.driver.parallel import JobSource, can_overlap, execute_parallel, resolve_job
from awp_pipelines.orchestration.ledger.history import PacketRunHistory, agent_run_truth
from awp_pipelines.orchestration.ledger.instance import storage_failure
from awp_pipelines.orchestration.ledger.ledger import Ledger, now_ms
from awp_pipelines.orchestration.ledger.liveness import this_runner
from awp_pipelines.orchestration.sensors.recovery import launch_tags

if TYPE_CHECKING:
    from awp_pipelines.dagster_compat.execution import ExecutionResult

_MAX_LAUNCHES = 500  # a guard against a bug in the decision function, far above any budget


def new_packet_run_id() -> str:
    return "pr-" + secrets.token_hex(4)


@dataclass
class PromptOutcome:
    prompt: str
    name: str
    result: str
    dagster_run: str | None = None
    attempt: str | None = None
    failure_class: str | None = None
    message: str = ""
    decision: str = ""
    state: str = ""  # the AgentRun's state (agent_run.py): the word `awp status` and `awp watch` say too
    done: bool = False  # completed, or not needed after an agent's `finish`

    @property
    def completed(self) -> bool:
        return self.done


@dataclass
class RunOptions:
    packet_run: str | None = None
    recover: bool = True  # retry, fallback and repair in process, as the sensor does under the daemon
    verbose: bool = False  # also print Dagster's own event log
    ignore_deps: bool = False  # the user asked to run prompts whose upstream is not completed in the packet run
    # Set, a selection whose prompts can overlap runs on the multiprocess executor (parallel.py), its steps
    # building the job again from this source; None, every run is in process.
    parallel: JobSource | None = None
    # A prompt that ended unfinished does not stop the ones after it that do not depend on it (`depends_on`;
    # the order alone is none): once nothing else is left, the first of them in order starts (`--keep-going`).
    keep_going: bool = False


@dataclass
class Progress:
    """What `awp run` reports as it goes, as values (progress.py): each Attempt as it starts and ends (and
    a probe's answer before it), each launch the decision function makes."""

    event: Listener | None = None
    launch: Callable[[Launch], None] = lambda launch: None

    def launched(self, launch: Launch) -> None:
        self.launch(launch)
        if self.event is not None:
            self.event(LaunchDecided(launch.prompt, launch.number, launch.mode, launch.reason))

    def waiting(self, launch: Launch) -> None:
        if self.event is not None:
            self.event(LaunchWaiting(launch.prompt, launch.number, launch.mode, launch.reason, launch.due_at))


class RunStopped(Exception):
    """`awp run` was stopped by a signal (interrupts.py): the packet run is stopped (a stop marker stands on
    it, so the recovery sensor launches nothing for it) and goes on with `awp run --packet-run` or `awp
    resume`. The message says exactly what was running: `stopped` lists the Attempts the signal ended."""

    def __init__(self, packet_run: str, signum: int, stopped: list[AttemptRecord] | None = None) -> None:
        self.packet_run = packet_run
        self.exit_code = 128 + signum
        super().__init__(stop_message(packet_run, signal.Signals(signum).name, stopped))


def stop_message(packet_run: str, signal_name: str, stopped: list[AttemptRecord] | None) -> str:
    """What the stop did, and no more: an Attempt is said recorded only when its record is stored, and
    checkpointed only when it left partial work. `stopped` None: the database could not say."""
    if stopped is None:
        done = "the instance's database did not answer, so what was running is not known"
    elif stopped:
        done = "; ".join(f"Attempt {r.identity.attempt_id} was running: recorded {r.result}"
                         + (f", its partial work checkpointed ({', '.join(sorted(r.wip))})" if r.wip
                            else ", it had changed nothing") for r in stopped)
    else:
        done = "no Attempt was running"
    return (f"stopped by {signal_name}: {done}. Packet run {packet_run} is stopped: nothing launches for it "
            f"until you resume it with --packet-run {packet_run} (or `awp resume`)")


def run_packet(compiled: CompiledPacket, instance: DagsterInstance, ledger: Ledger, selected: list[str],
               options: RunOptions, progress: Progress | None = None) -> tuple[str, list[PromptOutcome]]:
    """Runs go to `instance`, whose ledger the caller hands over. Raises RunStopped when a signal stopped it (only
    within `interrupts.stopping()`), and StorageUnavailable when the instance's database fails (an outage): the
    packet run stops there, its runs ended and their slots freed as far as the database allows, and goes on with
    `--packet-run`."""
    packet_run = options.packet_run or new_packet_run_id()
    keep_log_mirrors_out_of_the_terminal_group()
    try:
        if options.packet_run:
            ledger.resume(packet_run, time.time())  # the user's own launch of it lifts its stop
        return _run_packet(compiled, instance, ledger, selected, options, progress or Progress(), packet_run)
    except Interrupted as err:
        raise RunStopped(packet_run, err.signum, _store_stop(compiled, ledger, packet_run, err)) from None
    except Exception as err:
        failure = storage_failure(err)
        if failure is None:
            raise
        raise StorageUnavailable(f"packet run {packet_run} stopped: the Dagster instance's database failed "
                                 f"({failure}); continue it with --packet-run {packet_run} once it is back") from err


def _store_stop(compiled: CompiledPacket, ledger: Ledger, packet_run: str,
                err: Interrupted) -> list[AttemptRecord] | None:
    """Store the stop on the packet run; return the Attempts this process's runs recorded as stopped by it.
    With the database down neither is possible: the outage's own message follows from the caller."""
    try:
        ledger.stop(packet_run, StopMarker.from_signal(err.signum, time.time(),
                                                       f"awp run (pid {os.getpid()}) was stopped"))
        history = ledger.history(packet_run, compiled.binding.keys)
    except Exception as failed:
        if storage_failure(failed) is None:
            raise
        return None
    mine = this_runner()
    runs = {run_id for run_id, runner in ledger.runners([r.run_id for r in history.runs]).items()
            if runner == mine}
    return [r for h in history.agent_runs.values() for r in h.records
            if r.identity.dagster_run in runs and _failure_class(r) == "interrupted"]


def _failure_class(record: AttemptRecord) -> str | None:
    failure = record.failure or record.provider_failure
    return failure.failure_class if failure else None


def _run_packet(compiled: CompiledPacket, instance: DagsterInstance, ledger: Ledger, selected: list[str],
                options: RunOptions, progress: Progress, packet_run: str) -> tuple[str, list[PromptOutcome]]:
    binding = compiled.binding
    job = _job(compiled)
    base = _base_tags(packet_run)
    ledger.note_packet_run(binding.packet.name, packet_run, now_ms())
    recover_from_dead_runners(compiled, ledger)
    if options.packet_run is None:  # a new packet run: none before it is left reading `running`
        ledger.settle(binding, packet_run)
    history = ledger.history(packet_run, binding.keys)
    ledger.adopt(binding, history)  # a dead Attempt that committed is done: its record first
    fresh = _startable_fresh(binding, history, selected, options.ignore_deps)
    if fresh:
        # One run for the selection, as the UI launches it: Dagster's deps order the prompts, and prompts on
        # disjoint work trees run at the same time when they can.
        source = options.parallel if options.parallel and can_overlap(binding, fresh) else None
        _execute(job, instance, ledger, [binding.key(pid) for pid in fresh],
                 {**base, **({tags.IGNORE_DEPS: "true"} if options.ignore_deps else {})}, options, progress,
                 _in_parallel(source, ledger, binding, progress) if source else None)
    # Without recovery, one Attempt per selected prompt: the fresh ones just ran; a continued packet run
    # gets one round of what comes next.
    rounds = _MAX_LAUNCHES if options.recover else (0 if fresh else 1)
    executed = 0
    said_waiting: set[tuple[str, int, float]] = set()
    for _ in range(2 * _MAX_LAUNCHES):
        history = ledger.history(packet_run, binding.keys)
        outage.answered()  # the instance answered: an outage in progress is over
        # The selection belongs to the packet run even before its first run holds it: a prompt held back
        # above starts here once its upstream completed.
        states, _ = agent_run_truth(binding, history, selected)
        outlook = next_launches(list(states.values()), time.time(), history.stopped)
        if executed >= rounds or outlook.idle:
            past = _past_a_failure(binding, history, selected) if options.keep_going and outlook.idle else None
            if past is None:
                return packet_run, _outcomes(compiled, history, selected, outlook)
            _execute(job, instance, ledger, [binding.key(past)], {**base, tags.IGNORE_DEPS: "true"}, options,
                     progress)
            continue
        if not outlook.due:
            first = min(outlook.waiting, key=lambda launch: launch.due_at)
            if (first.prompt, first.number, first.due_at) not in said_waiting:  # once per wait, not per wake-up
                said_waiting.add((first.prompt, first.number, first.due_at))
                progress.waiting(first)
            stop = interrupts.current()
            with stop.cut_in() if stop is not None else nullcontext():  # a backoff ends at once on a signal
                time.sleep(max(0.0, first.due_at - time.time()))
            continue
        executed += 1
        for launch in outlook.due:
            progress.launched(launch)
            _execute(job, instance, ledger, [binding.key(launch.prompt)],
                     {**base, **launch_tags(binding, history, launch)}, options, progress, launch=launch)
    raise RuntimeError(f"packet run {packet_run}: more than {_MAX_LAUNCHES} launches; the decision function "
                       "should have ended every AgentRun")


def _startable_fresh(binding: PacketBinding, history: PacketRunHistory, selected: list[str],
                     ignore_deps: bool) -> list[str]:
    """The selected prompts without history that start now, in one run: each whose upstream prompts completed
    in this packet run or start in the same run (Dagster orders them); none an agent's `finish` made unneeded.
    A prompt held by an upstream that did not complete stays unstarted, as the sensor would leave it."""
    new = [pid for pid in selected if pid not in history.agent_runs]
    if ignore_deps:
        return new
    _, statuses = agent_run_truth(binding, history, selected)
    chosen: list[str] = []
    for pid in new:
        status = statuses[pid]
        if status.state in ("planned", "stopped") and all(d in chosen for d in status.held_by):
            chosen.append(pid)
    return chosen


def _past_a_failure(binding: PacketBinding, history: PacketRunHistory, selected: list[str]) -> str | None:
    """`--keep-going`, once nothing runs or waits: the first selected prompt, in order, never started and held
    only by the order (every prompt it declares it depends on completed). None after
    a verifier fault: a contract that could not run says the shared tooling is broken (Prompt Runner stops too)."""
    if any(h.last_record is not None and h.last_record.result == "verifier_fault" for h in history.agent_runs.values()):
        return None
    _, statuses = agent_run_truth(binding, history, selected)
    for pid in selected:
        status, declared = statuses[pid], binding.packet.prompt(pid).declared_depends_on or []
        if pid not in history.agent_runs and status.state == "planned" and status.held_by \
                and all(statuses[d].state == "completed" for d in declared if d in statuses):
            return pid
    return None


def execute_launch(compiled: CompiledPacket, instance: DagsterInstance, ledger: Ledger, packet_run: str,
                   launch: Launch, extra_tags: dict[str, str], options: RunOptions,
                   progress: Progress | None = None) -> None:
    """One launch (a repair by hand), as one run with its launch tags: no recovery after it."""
    binding = compiled.binding
    history = ledger.history(packet_run, binding.keys)
    ledger.note_packet_run(binding.packet.name, packet_run, now_ms())
    run_tags = {**_base_tags(packet_run), **launch_tags(binding, history, launch), **extra_tags}
    _execute(_job(compiled), instance, ledger, [binding.key(launch.prompt)], run_tags, options,
             progress or Progress(), launch=launch)


def _base_tags(packet_run: str) -> dict[str, str]:
    return {tags.PACKET_RUN: packet_run, **REPOSITORY_TAG}


def recover_from_dead_runners(compiled: CompiledPacket, ledger: Ledger) -> list[str]:
    """End the runs a dead `awp run` left unfinished (failed, slots freed) and save the partial work of the
    Attempts they were running as checkpoints of their AgentRuns. The caller holds the packet's lock."""
    binding = compiled.binding
    reaped = ledger.reap(binding.packet.name)
    ledger.free_ended_slots()  # theirs are freed already; these are any an outage left held
    for run_id, packet_run in reaped.items():
        if packet_run:
            history = ledger.history(packet_run, binding.keys)
            save_unrecorded_work(binding, history, packet_run, list(history.agent_runs), [run_id])
    return list(reaped)


Executor = Callable[[DagsterInstance, list, dict[str, str], str, bool], "ExecutionResult"]


def _in_parallel(source: JobSource, ledger: Ledger, binding: PacketBinding, progress: Progress) -> Executor:
    return lambda instance, keys, run_tags, run_id, verbose: execute_parallel(
        source, instance, ledger, keys, run_tags, run_id, verbose, binding.keys, progress.event)


def _execute(job: JobDefinition, instance: DagsterInstance, ledger: Ledger, keys: list, run_tags: dict[str, str],
             options: RunOptions, progress: Progress, executor: Executor | None = None,
             launch: Launch | None = None) -> None:
    """One run of `keys`; a `launch` (one prompt's, decided here) goes to the compute as its run config."""
    # Dagster's console log only with --verbose; else a silent logger stands in for its default console.
    loggers = {"console": {"config": {"log_level": "INFO"}}} if options.verbose else {"silent": {}}
    run_config = {"loggers": loggers, **(launch_run_config(keys[0], launch) if launch is not None else {})}
    stop = interrupts.current()
    if stop is not None:
        stop.check()  # no new run once a signal asked to stop
    run_id = str(uuid.uuid4())  # a run id as Dagster makes one
    ledger.note_runner(run_id)  # before the run exists: a process killed at its start is still reaped
    try:
        result: ExecutionResult
        if executor is not None:
            result = executor(instance, keys, run_tags, run_id, options.verbose)
        else:
            with listening(progress.event):  # the compute runs in this thread: its events come back as values
                result = job.execute_in_process(instance=instance, asset_selection=keys, raise_on_error=False,
                                                tags=run_tags, run_config=run_config, run_id=run_id)
    finally:
        # Nothing of the run goes on in this process now: a slot it still holds (a step could not free it
        # while the database was down) would block the next run forever.
        ledger.close_run(run_id)
    if stop is not None:
        stop.check()
        if ended_by_interrupt(result):
            # The signal came while Dagster, not the compute, held the handler (between steps): Dagster ended
            # the run and kept no signal number.
            raise Interrupted(signal.SIGINT)


def _job(compiled: CompiledPacket) -> JobDefinition:
    return resolve_job(compiled, {"silent": _silent})


@logger(config_schema=None, description="Prints nothing: `awp run` reports progress from its events.")
def _silent(_init_context: InitLoggerContext) -> logging.Logger:
    log = logging.getLogger("awp.silent")
    log.propagate = False
    log.handlers = [logging.NullHandler()]
    return log


def _outcomes(compiled: CompiledPacket, history: PacketRunHistory, selected: list[str],
              outlook: Outlook) -> list[PromptOutcome]:
    packet = compiled.packet
    states, statuses = agent_run_truth(compiled.binding, history, selected)
    out = []
    for pid in selected:
        prompt, status = packet.prompt(pid), statuses[pid]
        agent_run = history.agent_runs.get(pid)
        record = agent_run.last_record if agent_run else None
        final = states[pid].facts[-1] if states[pid].facts else None
        decision = outlook.ended.get(pid, "")
        if final is not None and (record is None or record.identity.number < final.number):
            # Its process died before the record, and no commit of it exists (one that committed was adopted,
            # its record written): interrupted, and it counted against the budget all the same.
            ident = history.attempt_of(pid, final.number)
            out.append(PromptOutcome(pid, prompt.name, final.result, attempt=ident, failure_class=final.failure_class,
                                     message="interrupted: its process died before the Attempt's record was written",
                                     decision=decision, state=status.state, done=status.done))
            continue
        if record is None:
            out.append(PromptOutcome(pid, prompt.name, "blocked_by_dependency" if status.held_by else "not_run",
                                     message=status.reason, decision=decision, state=status.state, done=status.done))
            continue
        failure = record.failure
        out.append(PromptOutcome(pid, prompt.name, record.result, record.identity.dagster_run,
                                 record.identity.attempt_id, failure.failure_class if failure else None,
                                 record.target.reason if record.adopted else _explain(record), decision, status.state,
                                 status.done))
    return out


def _explain(record: AttemptRecord) -> str:
    if record.result == "completed":
        return ""
    if record.result == "verification_failed" and record.verifier is not None:
        unmet = [i.label + (f" ({i.details[0]})" if i.details else "") for i in record.verifier.items if not i.passed]
        return "unmet: " + "; ".join(unmet)
    failure = record.failure
    return f"{failure.failure_class}: {failure.message}" if failure else ""

