"""The packet job's executor: prompts that may overlap run as step processes forked from a forkserver that imported
AWP and Dagster once (parallel.py builds and runs the job); the run worker beats for its run while it orchestrates.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from dagster import DagsterEvent, Executor, ExecutorDefinition

from awp_pipelines.dagster_compat.executor import STEP_IMPORTS, multi_or_in_process
from awp_pipelines.orchestration.ledger.factory import ledger_of
from awp_pipelines.orchestration.ledger.liveness import RUN_STEP, beating

# Agents wait on their models, not on this machine's CPUs: more steps than cores. The pools and leases, not
# this number, keep two agents off one work tree or one account.
DEFAULT_PARALLEL = 8

# What the forkserver imports before it forks a step: AWP's assets and compute (and Dagster), what a step imports
# as it starts, then the run's job, built.
STEP_PRELOAD = ["awp_pipelines.orchestration.assets", "awp_pipelines.orchestration.compute.prompt_compute",
                *STEP_IMPORTS, "awp_pipelines.orchestration.compute.step_preload"]


def parallel_executor(max_concurrent: int = DEFAULT_PARALLEL) -> ExecutorDefinition:
    """Step processes forked from a server that imported Dagster and AWP once: spawning each step afresh cost
    it those imports (8 prompts of 5 s in process: 2.2x one prompt spawned, 1.4x forked; make bench).

    Run config `execution: {config: {in_process: {}}}` runs the steps in the run worker's process instead (a
    Celery worker, the recovery sensor's one-prompt launches); so does a daemonic process (a Celery prefork
    child), which may not start the forkserver's children."""
    return multi_or_in_process("awp_multiprocess", {"max_concurrent": max_concurrent, "start_method": {
        "forkserver": {"preload_modules": STEP_PRELOAD}}}, RunBeatingExecutor)


class RunBeatingExecutor(Executor):
    """Dagster's executor, beating for the run from its run worker while it orchestrates the steps.

    A step's compute beats only while it runs (ledger/liveness.py). A run worker killed before its first compute (its
    steps waiting for a pool slot, its step processes starting) left no beat, and the default run launcher has no
    health check for run monitoring to ask: the run stayed STARTED for good, holding its pool slots. The run's
    own beat makes that run silent, and the housekeeping sensor (or the next `awp run`) fails it."""

    def __init__(self, inner: Executor) -> None:
        self.inner = inner

    @property
    def retries(self) -> Any:  # RetryMode: not exported by dagster
        return self.inner.retries

    @property
    def step_dependency_config(self) -> Any:
        return self.inner.step_dependency_config

    def execute(self, plan_context: Any, execution_plan: Any) -> Iterator[DagsterEvent]:
        # No packet: the location's housekeeping judges it (packet or not); a run of `awp run` is judged by its
        # runner's liveness there too (ledger/liveness.py), and each compute's beat names the packet.
        ledger, run_id = ledger_of(plan_context.instance), plan_context.dagster_run.run_id
        with beating(ledger, run_id, RUN_STEP, "", on_beat=lambda: ledger.repair_turns(run_id)):
            yield from self.inner.execute(plan_context, execution_plan)
