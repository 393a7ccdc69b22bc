"""A DAG packet in parallel: prompts with no dependency path between them, on disjoint work trees, run at the
same time, in the one run of the selection.

Dagster's multiprocess executor runs the steps; the repo pools (limit 1) keep one agent per work tree and the
account leases one Attempt per account, whoever launched the run. Under the daemon the packet's job runs
this executor with `max_concurrent` = DEFAULT_PARALLEL. `awp run` runs a selection that can overlap the same
way (`--parallel N`), and a selection that cannot (a chain, one work tree) in process as before: a step
process costs a Python start and a compile of the packet, which buys nothing when nothing overlaps.

A step process is forked from a forkserver, not from `awp run`, so the job is built again from a `JobSource`:
the packet folder, the providers file, the plan's overrides and the runtime settings `awp run` was given. The
forkserver builds it once before it forks the steps (step_preload.py), and `awp run` starts the forkserver
as soon as it knows the selection can overlap, so its start overlaps the opening of the instance.
"""

from __future__ import annotations

import functools
import json
import logging
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dagster import (
    AssetKey,
    DagsterInstance,
    Definitions,
    InitLoggerContext,
    JobDefinition,
    LoggerDefinition,
    build_reconstructable_job,
    colored_console_logger,
    logger,
)

from awp_pipelines.core.engine.progress import AttemptEnded, AttemptStarted, Listener, ProgressEvent
from awp_pipelines.core.packet.packet import Packet
from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.dagster_compat.execution import execute_run
from awp_pipelines.dagster_compat.executor import start_step_server
from awp_pipelines.orchestration.compile.naming import job_name
from awp_pipelines.orchestration.compute.step_executor import DEFAULT_PARALLEL, STEP_PRELOAD
from awp_pipelines.orchestration.ledger.history import ATTEMPT_STARTED
from awp_pipelines.orchestration.ledger.ledger import AttemptEvent, Ledger

if TYPE_CHECKING:
    from awp_pipelines.dagster_compat.execution import ExecutionResult
    from awp_pipelines.orchestration.assets import CompiledPacket
    from awp_pipelines.orchestration.compile.binding import PacketBinding


def start_steps_early(source: JobSource) -> None:
    """Start the forkserver of this process's parallel runs now, building `source`'s job, while `awp run`
    opens the instance and reads the history (else it starts with the run's first step, and every step
    waits for its imports and the job). Once per process: a later parallel run's steps build their own job
    if the forkserver's is another."""
    start_step_server(STEP_PRELOAD, build_reconstructable_job(__name__, packet_job.__name__, (source.to_json(),)))


def can_overlap(binding: PacketBinding, selected: list[str]) -> bool:
    """Whether two of the selected prompts may run at the same time: no dependency path between them (over
    the whole packet: conservative) and different work-tree pools (the translator's)."""
    pools = binding.pools
    ancestors = _ancestors(binding.packet)
    return any(pools[a] != pools[b] and a not in ancestors[b] and b not in ancestors[a]
               for i, a in enumerate(selected) for b in selected[i + 1:])


def _ancestors(packet: Packet) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for prompt in packet.prompts:  # dependencies come earlier in the packet (lint refuses a cycle)
        direct = packet.dependencies(prompt)
        found[prompt.id] = set(direct).union(*(found.get(d, set()) for d in direct))
    return found


@dataclass(frozen=True)
class JobSource:
    """What a spawned step process needs to build the same packet job `awp run` built (JSON: Dagster passes
    it along as the reconstructor's argument)."""

    packet_root: str
    providers_file: str | None = None
    overrides: dict[str, str | None] = field(default_factory=dict)
    runtime: dict[str, Any] = field(default_factory=dict)
    parallel: int = DEFAULT_PARALLEL
    translator: str | None = None  # the dotted path of the packet's translator (translator_path)
    # This compile's own id: a job built for it (packet_job keeps the last few, and so does the forkserver that
    # preloaded one) serves its runs only, not those of a later `run` in the same process after an edit.
    build: str = ""

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)


@functools.lru_cache(maxsize=4)
def packet_job(source_json: str) -> JobDefinition:
    """The reconstructor: the packet's job with the quiet and console loggers, built from a JobSource, once
    per JobSource in a process (a step forked from the forkserver finds the forkserver's)."""
    from awp_pipelines.core.packet.packet import load_packet
    from awp_pipelines.core.packet.providers_config import load_catalog
    from awp_pipelines.core.planning.plan import Overrides, PlanContext
    from awp_pipelines.orchestration.assets import packet_assets
    from awp_pipelines.orchestration.compute.resources import AwpResource

    source = JobSource(**json.loads(source_json))
    catalog = load_catalog(Path(source.providers_file) if source.providers_file else None)
    packet = load_packet(source.packet_root)
    compiled = packet_assets(packet, catalog, AwpResource(**source.runtime), source.translator,
                             plan_context=PlanContext(catalog, Overrides(**source.overrides)),
                             parallel=source.parallel)
    return resolve_job(compiled, {"awp_quiet": _quiet})


def resolve_job(compiled: CompiledPacket, loggers: Mapping[str, LoggerDefinition]) -> JobDefinition:
    """The packet's job, with `loggers` to pick from in the run config (and Dagster's console logger)."""
    defs = Definitions(assets=compiled.assets, jobs=[compiled.job], resources=dict(compiled.resources),
                       loggers={**loggers, "console": colored_console_logger})
    return defs.resolve_job_def(job_name(compiled.packet))


@logger(config_schema=None, description="Logs nothing: `awp run` prints the Attempts' lines from the event log.")
def _quiet(_init_context: InitLoggerContext) -> logging.Logger:
    log = logging.getLogger("awp.quiet")
    log.handlers = [logging.NullHandler()]
    log.propagate = False
    return log


def execute_parallel(source: JobSource, instance: DagsterInstance, ledger: Ledger, keys: list[AssetKey],
                     run_tags: dict[str, str], run_id: str, verbose: bool, prompts: Mapping[AssetKey, str],
                     listener: Listener | None) -> ExecutionResult:
    """One run of the selection on the multiprocess executor, in this process (it waits for the run).
    The steps run in other processes: each Attempt's start and end reach `listener` from the stored event log
    (its start marker and its record, `Ledger.run_events`), as they are written."""
    recon = build_reconstructable_job(__name__, packet_job.__name__, (source.to_json(),))
    job_def = recon.get_definition()
    loggers = {"console": {"config": {"log_level": "INFO"}}} if verbose else {"awp_quiet": {}}
    run = instance.create_run_for_job(job_def=job_def, run_config={"loggers": loggers}, tags=run_tags,
                                      run_id=run_id, job_code_origin=recon.get_python_origin(),
                                      asset_selection=frozenset(keys))
    # Dagster takes SIGINT and SIGTERM for the run (capture_interrupts) and tells each step process to stop; the
    # runner then sees an interrupted run and stops as for SIGINT (exit 130, whichever signal it was).
    with _forwarding_attempts(ledger, run_id, prompts, listener):
        return execute_run(recon, run, instance)


@contextmanager
def _forwarding_attempts(ledger: Ledger, run_id: str, prompts: Mapping[AssetKey, str],
                         listener: Listener | None, interval_s: float = 0.5) -> Iterator[None]:
    """Tail the run's events in a thread while the block runs: each Attempt's start marker and record, as the
    values the in-process path hands its listener (there the compute emits them itself)."""
    done = threading.Event()

    def tail() -> None:
        cursor = None
        while True:
            last_round = done.is_set()
            found, cursor, more = ledger.run_events(run_id, cursor)
            for stored in found:
                event = _attempt_event(stored, prompts)
                if event is not None and listener is not None:
                    listener(event)
            if more:
                continue
            if last_round:
                return
            done.wait(interval_s)

    thread = threading.Thread(target=tail, name=f"awp-tail-{run_id[:8]}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join(timeout=10)


def _attempt_event(stored: AttemptEvent, prompts: Mapping[AssetKey, str]) -> ProgressEvent | None:
    """An Attempt's start (its marker) or end (its record) from a stored asset event; None for anything else."""
    key, meta = stored
    prompt = prompts.get(key)
    if prompt is None:
        return None
    if meta.get(tags.EVENT) == ATTEMPT_STARTED:
        return AttemptStarted(prompt, str(meta.get(tags.ATTEMPT, "")), str(meta.get(tags.MODE, "")),
                              str(meta.get(tags.PROVIDER, "")), meta.get(tags.MODEL), meta.get(tags.ACCOUNT), "")
    if tags.RESULT in meta and tags.ATTEMPT in meta:
        return AttemptEnded(prompt, str(meta[tags.ATTEMPT]), str(meta[tags.RESULT]))
    return None
