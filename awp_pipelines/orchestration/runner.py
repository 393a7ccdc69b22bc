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
import socket
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass

from dagster import (
    DagsterEventType,
    DagsterInstance,
    InitLoggerContext,
    JobDefinition,
    logger,
)
from dagster._core.events import RunFailureReason
from dagster._core.execution.execution_result import ExecutionResult
from dagster._core.utils import make_new_run_id

from awp_pipelines import interrupts, tags
from awp_pipelines.attempts import AttemptRecord
from awp_pipelines.errors import StorageUnavailable
from awp_pipelines.interrupts import Interrupted
from awp_pipelines.launches import Launch, Outlook, next_launches
from awp_pipelines.lifecycle import agent_run_status
from awp_pipelines.orchestration.assets import CompiledPacket
from awp_pipelines.orchestration.history import (
    PacketRunHistory,
    packet_run_history,
    prompt_states,
)
from awp_pipelines.orchestration.instance import storage_failure
from awp_pipelines.orchestration.parallel import JobSource, can_overlap, execute_parallel, resolve_job
from awp_pipelines.orchestration.reaper import end_run, reap_dead_runs, runner_tag, save_unrecorded_work
from awp_pipelines.orchestration.sensors import launch_tags

# The code location of workspace.yaml: runs tagged with it show under the job in the UI.
REPOSITORY_TAG = {".dagster/repository": "__repository__@awp_pipelines"}
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
    state: str = ""  # the AgentRun's lifecycle state (lifecycle.agent_run_status)

    @property
    def completed(self) -> bool:
        return self.result == "completed"


@dataclass
class RunOptions:
    packet_run: str | None = None
    recover: bool = True  # retry, fallback and repair in process, as the sensor does under the daemon
    verbose: bool = False  # also print Dagster's own event log
    # Set, a selection whose prompts can overlap runs on the multiprocess executor (parallel.py), its steps
    # building the job again from this source; None, every run is in process.
    parallel: JobSource | None = None


@dataclass
class Progress:
    """What `awp run` prints as it goes: each Attempt as it starts and ends, each decision."""

    attempt: Callable[[str], None] = lambda line: None
    launch: Callable[[Launch], None] = lambda launch: None


class RunStopped(Exception):
    """`awp run` was stopped by a signal (interrupts.py): the Attempt it was running is recorded; the packet
    run goes on with `awp run --packet-run`."""

    def __init__(self, packet_run: str, signum: int) -> None:
        self.packet_run = packet_run
        self.exit_code = 128 + signum
        super().__init__(f"stopped by {signal.Signals(signum).name}: an Attempt it was running is recorded, its "
                         f"partial work checkpointed; continue with --packet-run {packet_run}")


def run_packet(compiled: CompiledPacket, instance: DagsterInstance, selected: list[str], options: RunOptions,
               progress: Progress | None = None) -> tuple[str, list[PromptOutcome]]:
    """Raises RunStopped when a signal stopped it (only within `interrupts.stopping()`), and StorageUnavailable
    when the instance's database fails (an outage): the packet run stops there, its runs ended and their slots
    freed as far as the database allows, and goes on with `--packet-run`."""
    packet_run = options.packet_run or new_packet_run_id()
    try:
        return _run_packet(compiled, instance, selected, options, progress or Progress(), packet_run)
    except Interrupted as err:
        raise RunStopped(packet_run, err.signum) from None
    except Exception as err:
        failure = storage_failure(err)
        if failure is None:
            raise
        raise StorageUnavailable(f"packet run {packet_run} stopped: the Dagster instance's database failed "
                                 f"({failure}); continue it with --packet-run {packet_run} once it is back") from err


def _run_packet(compiled: CompiledPacket, instance: DagsterInstance, selected: list[str], options: RunOptions,
                progress: Progress, packet_run: str) -> tuple[str, list[PromptOutcome]]:
    binding = compiled.binding
    job = _job(compiled, progress)
    base = _base_tags(binding.packet.name, packet_run)
    recover_from_dead_runners(compiled, instance)
    history = packet_run_history(instance, packet_run, binding.keys)
    fresh = [pid for pid in selected if pid not in history.agent_runs]
    if fresh:
        # One run for the selection, as the UI launches it: Dagster's deps order the prompts, and prompts on
        # disjoint work trees run at the same time when they can.
        source = options.parallel if options.parallel and can_overlap(binding.packet, fresh) else None
        _execute(job, instance, [binding.key(pid) for pid in fresh], base, options,
                 _in_parallel(source, progress) if source else None)
    # Without recovery, one Attempt per selected prompt: the fresh ones just ran; a continued packet run
    # gets one round of what comes next.
    rounds = _MAX_LAUNCHES if options.recover else (0 if fresh else 1)
    executed = 0
    for _ in range(2 * _MAX_LAUNCHES):
        history = packet_run_history(instance, packet_run, binding.keys)
        outlook = next_launches(prompt_states(binding, history), time.time())
        if executed >= rounds or outlook.idle:
            return packet_run, _outcomes(compiled, history, selected, outlook)
        if not outlook.due:
            stop = interrupts.current()
            with stop.cut_in() if stop is not None else nullcontext():  # a backoff ends at once on a signal
                time.sleep(max(0.0, min(launch.due_at for launch in outlook.waiting) - time.time()))
            continue
        executed += 1
        for launch in outlook.due:
            progress.launch(launch)
            _execute(job, instance, [binding.key(launch.prompt)],
                     {**base, **launch_tags(binding, history, launch)}, options)
    raise RuntimeError(f"packet run {packet_run}: more than {_MAX_LAUNCHES} launches; the decision function "
                       "should have ended every AgentRun")


def execute_launch(compiled: CompiledPacket, instance: DagsterInstance, packet_run: str, launch: Launch,
                   extra_tags: dict[str, str], options: RunOptions, progress: Progress | None = None) -> None:
    """One launch (a repair by hand), as one run with its launch tags: no recovery after it."""
    binding = compiled.binding
    history = packet_run_history(instance, packet_run, binding.keys)
    run_tags = {**_base_tags(binding.packet.name, packet_run), **launch_tags(binding, history, launch), **extra_tags}
    _execute(_job(compiled, progress or Progress()), instance, [binding.key(launch.prompt)], run_tags, options)


def _base_tags(packet: str, packet_run: str) -> dict[str, str]:
    return {tags.PACKET: packet, tags.PACKET_RUN: packet_run, "user": _launched_by(), **REPOSITORY_TAG,
            **runner_tag()}


def recover_from_dead_runners(compiled: CompiledPacket, instance: DagsterInstance) -> list[str]:
    """End the runs a dead `awp run` left unfinished (failed, slots freed) and save the partial work of the
    Attempts they were running as checkpoints of their AgentRuns. The caller holds the packet's lock."""
    binding = compiled.binding
    reaped = reap_dead_runs(instance, binding.packet.name)
    for run in reaped:
        packet_run = run.tags.get(tags.PACKET_RUN)
        if not packet_run:
            continue
        history = packet_run_history(instance, packet_run, binding.keys)
        save_unrecorded_work(binding, history, packet_run, list(history.agent_runs), [run.run_id])
    return [run.run_id for run in reaped]


Executor = Callable[[DagsterInstance, list, dict[str, str], str, bool], ExecutionResult]


def _in_parallel(source: JobSource, progress: Progress) -> Executor:
    return lambda instance, keys, run_tags, run_id, verbose: execute_parallel(
        source, instance, keys, run_tags, run_id, verbose, progress.attempt)


def _execute(job: JobDefinition, instance: DagsterInstance, keys: list, run_tags: dict[str, str],
             options: RunOptions, executor: Executor | None = None) -> None:
    loggers = {"awp_progress": {}, **({"console": {"config": {"log_level": "INFO"}}} if options.verbose else {})}
    stop = interrupts.current()
    if stop is not None:
        stop.check()  # no new run once a signal asked to stop
    run_id = make_new_run_id()
    try:
        result: ExecutionResult
        if executor is not None:
            result = executor(instance, keys, run_tags, run_id, options.verbose)
        else:
            result = job.execute_in_process(instance=instance, asset_selection=keys, raise_on_error=False,
                                            tags=run_tags, run_config={"loggers": loggers}, run_id=run_id)
    finally:
        # Nothing of the run goes on in this process now: a slot it still holds (a step could not free it
        # while the database was down) would block the next run forever.
        end_run(instance, run_id)
    if stop is not None:
        stop.check()
        if _interrupted(result):
            # The signal came while Dagster, not the compute, held the handler (between steps): Dagster ended
            # the run and kept no signal number.
            raise Interrupted(signal.SIGINT)


def _interrupted(result: ExecutionResult) -> bool:
    return any(event.event_type == DagsterEventType.RUN_FAILURE and event.job_failure_data is not None
               and event.job_failure_data.failure_reason == RunFailureReason.UNEXPECTED_TERMINATION
               for event in result.all_events)


def _job(compiled: CompiledPacket, progress: Progress) -> JobDefinition:
    @logger(config_schema=None, description="Prints each Attempt's start and end for `awp run`.")
    def awp_progress(_init_context: InitLoggerContext) -> logging.Logger:
        log = logging.getLogger(f"awp.progress.{id(progress)}")
        log.setLevel(logging.INFO)
        log.propagate = False
        log.handlers = [_ProgressHandler(progress.attempt)]
        return log

    return resolve_job(compiled, {"awp_progress": awp_progress})


class _ProgressHandler(logging.Handler):
    """Forwards the compute's own Attempt lines (not Dagster's engine events)."""

    def __init__(self, sink: Callable[[str], None]) -> None:
        super().__init__(logging.INFO)
        self._sink = sink

    def emit(self, record: logging.LogRecord) -> None:
        meta = getattr(record, "dagster_meta", None) or {}
        message = meta.get("orig_message") if isinstance(meta, dict) else None
        if isinstance(message, str) and message.startswith("Attempt "):
            self._sink(message)


def _launched_by() -> str:
    return f"awp run (pid {os.getpid()} on {socket.gethostname()})"


def _outcomes(compiled: CompiledPacket, history: PacketRunHistory, selected: list[str],
              outlook: Outlook) -> list[PromptOutcome]:
    packet = compiled.packet
    states = {s.prompt: s for s in prompt_states(compiled.binding, history, selected)}
    status = {pid: agent_run_status(s) for pid, s in states.items()}
    out = []
    for pid in selected:
        prompt = packet.prompt(pid)
        agent_run = history.agent_runs.get(pid)
        record = agent_run.last_record if agent_run else None
        final = states[pid].facts[-1] if states[pid].facts else None
        if final is not None and (record is None or record.identity.number < final.number):
            # Its process died before the record: adopted when it had committed (the commit is the proof),
            # else interrupted (it counted against the budget all the same).
            ident = tags.attempt_id(tags.agent_run_id(history.packet_run, pid), final.number)
            adopted = final.result == "completed"
            out.append(PromptOutcome(pid, prompt.name, final.result, attempt=ident, failure_class=final.failure_class,
                                     message="adopted: committed before its process died" if adopted else
                                     "interrupted: its process died before the Attempt's record was written",
                                     decision="" if adopted else outlook.ended.get(pid, ""),
                                     state=status[pid].state))
            continue
        if record is None:
            waits = [d for d in packet.dependencies(prompt) if (d in history.agent_runs or d in selected)
                     and not (d in status and status[d].state == "completed")]
            out.append(PromptOutcome(pid, prompt.name, "blocked_by_dependency" if waits else "not_run",
                                     message=f"waits for {', '.join(waits)}" if waits else "",
                                     decision=outlook.ended.get(pid, ""), state=status[pid].state))
            continue
        failure = record.failure
        out.append(PromptOutcome(pid, prompt.name, record.result, record.identity.dagster_run,
                                 record.identity.attempt_id, failure.failure_class if failure else None,
                                 _explain(record), outlook.ended.get(pid, ""), status[pid].state))
    return out


def _explain(record: AttemptRecord) -> str:
    if record.result == "completed":
        return ""
    if record.result == "verification_failed" and record.verifier is not None:
        unmet = [i.label + (f" ({i.details[0]})" if i.details else "") for i in record.verifier.items if not i.passed]
        return "unmet: " + "; ".join(unmet)
    failure = record.failure
    return f"{failure.failure_class}: {failure.message}" if failure else ""

