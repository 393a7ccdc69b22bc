"""Which `awp run` process drives a run: noted before the run starts (`awp/runner/<run id>` in the instance's
key-value table: host, pid and process start time, since a pid alone is reused), and whether it lives."""

from __future__ import annotations

import os
from collections.abc import Collection

from dagster import DagsterInstance

from awp_pipelines.core.engine.hosts import host_id
from awp_pipelines.core.engine.runlock import process_start_time
from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.dagster_compat.kvs import kv_get, kv_set


def this_runner() -> str:
    """This process, as its runs name it: host, pid and start time (a pid alone is reused)."""
    pid = os.getpid()
    return f"{host_id()}:{pid}:{process_start_time(pid) or 0}"


def note_runner(instance: DagsterInstance, run_id: str) -> None:
    """Before the run starts: this process drives it."""
    kv_set(instance, {tags.RUNNER_KEY + run_id: this_runner()})


def runners_of(instance: DagsterInstance, run_ids: Collection[str]) -> dict[str, str]:
    """Run id → the `awp run` process that drives it, for those of `run_ids` an `awp run` launched. One read."""
    if not run_ids:
        return {}
    stored = kv_get(instance, {tags.RUNNER_KEY + run_id for run_id in run_ids})
    return {key.removeprefix(tags.RUNNER_KEY): runner for key, runner in stored.items()}


def this_host(runner: str | None) -> bool:
    """Whether the runner (host:pid:start) runs on this host, where its pid says whether it lives."""
    return runner is not None and runner.partition(":")[0] == host_id()


def runner_alive(value: str) -> bool:
    host, _, rest = value.partition(":")
    pid_text, _, start = rest.partition(":")
    if host != host_id() or not pid_text.isdigit():
        return True  # another machine's process: its heartbeat judges it (heartbeat.py)
    started = process_start_time(int(pid_text))
    return started is not None and str(started) == start
