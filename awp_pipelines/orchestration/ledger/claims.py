"""An Attempt starts once: its id is claimed in the instance, atomically, by the process that starts it.

A run worker can be started twice for one run: Celery redelivers a task whose broker visibility timeout
passed (celery#5935), a pod restarts, a launcher retries. Dagster ignores a second worker of a STARTED
run only with run monitoring on, and both deliveries can pass that check while the run is STARTING. The
claim is a row of the instance's key-value table, whose key is unique: of two processes inserting it (on
any hosts, SQLite or PostgreSQL), one wins; the other starts no agent.
"""

from __future__ import annotations

import os

from dagster import DagsterInstance

from awp_pipelines.core.engine.hosts import host_id
from awp_pipelines.core.engine.runlock import process_start_time
from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.dagster_compat.kvs import kv_insert, kv_swap, kv_value
from awp_pipelines.orchestration.ledger.run_states import UNFINISHED


def this_process(run_id: str) -> str:
    """Run, host, pid and process start time (a pid alone is reused)."""
    pid = os.getpid()
    return f"{run_id}:{host_id()}:{pid}:{process_start_time(pid) or 0}"


def claim_attempt(instance: DagsterInstance, attempt_id: str, run_id: str) -> str | None:
    """Claim `attempt_id` for this process of run `run_id`. None when the claim is ours; else the holder
    (run:host:pid:start) that already starts it. A holder whose run has ended never started it (its start is
    stored right after the claim, and a stored start moves the count to the next Attempt id): its claim is
    taken over, by compare-and-set, so a run that died between the two steps never blocks the AgentRun."""
    key, me = tags.CLAIM_KEY + attempt_id, this_process(run_id)
    if kv_insert(instance, key, me):
        return None
    holder = kv_value(instance, key)
    if holder == me:
        return None
    holder_run = instance.get_run_by_id(holder.split(":", 1)[0])
    if holder_run is not None and holder_run.status in UNFINISHED:
        return holder
    return None if kv_swap(instance, key, holder, me) else claim_attempt(instance, attempt_id, run_id)
