"""The packet's executor: Dagster's public multi-or-in-process executor with AWP's defaults, whose forkserver
imports the step's modules and builds the run's job before it forks a step."""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.forkserver
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from dagster import (
    Executor,
    ExecutorDefinition,
    Field,
    InitExecutorContext,
    deserialize_value,
    executor,
    multi_or_in_process_executor,
    serialize_value,
)


def multi_or_in_process(name: str, multiprocess: Mapping[str, Any],
                        wrap: Callable[[Executor], Executor] = lambda chosen: chosen) -> ExecutorDefinition:
    """Dagster's multi-or-in-process executor with AWP's multiprocess settings as its default: run config
    `execution: {config: {in_process: {}}}` runs the steps in the run worker's own process, and so does a
    daemonic process (a Celery prefork child), which may not start step processes. `wrap` is given the
    executor chosen and returns the one that runs."""

    base = multi_or_in_process_executor  # Dagster's public executor: its config schema, requirements and executors

    @executor(name=name, config_schema=Field(base.config_schema.config_type,
                                             default_value={"multiprocess": dict(multiprocess)}),
              requirements=base.get_requirements)
    def _executor(init_context: InitExecutorContext) -> Executor:
        config = init_context.executor_config
        chosen: Mapping[str, Any] = config
        if "multiprocess" in config and not multiprocessing.current_process().daemon:
            multi: Mapping[str, Any] = config["multiprocess"]  # type: ignore[assignment]
            start: Mapping[str, Any] = multi.get("start_method") or {}
            if "forkserver" in start:
                start_step_server((start["forkserver"] or {}).get("preload_modules") or [], init_context.job)
        else:
            chosen = {"in_process": config.get("in_process")
                      or {"retries": config["multiprocess"]["retries"]}}  # type: ignore[index]
        create = base.executor_creation_fn
        assert create is not None  # Dagster's own executor always has one
        return wrap(create(InitExecutorContext(job=init_context.job, executor_def=base, executor_config=chosen,
                                               instance=init_context.instance)))

    return _executor


# What a step process imports only once it opens the instance and starts its step (Dagster imports them lazily;
# ~25 ms of CPU each step): the forkserver imports them first (a name gone in another Dagster is skipped).
STEP_IMPORTS = ["dagster._core.instance.factory", "dagster._core.storage.legacy_storage",
                "dagster._core.storage.local_compute_log_manager", "dagster._core.storage.root",
                "dagster._core.secrets.env_file", "dagster._core.storage.defs_state.blob_storage_state_storage",
                "upath.implementations.local", "fsspec.implementations.local",
                "dagster._core.system_config.composite_descent", "watchdog.observers.polling"]


# The job a forkserver builds before it forks the step processes (a serialized ReconstructableJob): set only
# while the forkserver starts, and read (and dropped) by step_preload.py in it.
PRELOAD_JOB_ENV = "AWP_PRELOAD_JOB"


_MAX_ENV = 100_000  # Linux refuses a variable over 128 KiB (a selection of thousands of assets): no preload then


def start_step_server(preload: Sequence[str], job: object) -> None:
    """Start this process's forkserver now (Dagster starts it at the first step otherwise), importing `preload`
    and building `job` before it forks a step: each step then finds the job built instead of loading and
    compiling the packet again. One forkserver serves the process for good: a later run of another job finds
    it running, and its steps build their own job, as without it."""
    from dagster._core.definitions.reconstruct import ReconstructableJob

    text = serialize_value(job) if isinstance(job, ReconstructableJob) else ""
    if not text or len(text) > _MAX_ENV:
        return
    multiprocessing.get_context("forkserver").set_forkserver_preload(
        ["dagster._core.executor.multiprocess", *preload])  # the list Dagster's executor would set
    before = os.environ.get(PRELOAD_JOB_ENV)
    os.environ[PRELOAD_JOB_ENV] = text  # the forkserver inherits the environment it starts with
    try:
        multiprocessing.forkserver.ensure_running()
    finally:
        if before is None:
            os.environ.pop(PRELOAD_JOB_ENV, None)
        else:
            os.environ[PRELOAD_JOB_ENV] = before


def build_preloaded_job() -> None:
    """In the forkserver: build the job `start_step_server` named, so each step forked from it has it (Dagster
    keeps the last job a process built; the packet's reconstructor keeps its own). The variable goes first:
    the agents the steps start have no use for it."""
    text = os.environ.pop(PRELOAD_JOB_ENV, None)
    if text:
        # Any failure is the step's to report: it builds the job itself, as without the forkserver's, and the
        # forkserver must not die of it (it would fail every step of the run).
        with contextlib.suppress(Exception):
            from dagster._core.definitions.reconstruct import ReconstructableJob

            deserialize_value(text, ReconstructableJob).get_definition()
