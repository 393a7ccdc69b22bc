"""The recovery sensor: under the daemon, what `awp run` does in process. One per packet.

Each tick looks at the packet runs whose runs ended since its cursor (and those still waiting for a
backoff), passes over those a live `awp run` drives (it launches their next Attempts itself), asks
`next_launches` what comes next, and returns each due launch as a `RunRequest` of one
prompt, the launch itself its run config (attempt_config.py). The run key is the Attempt's id, so a launch is
requested once however often it is computed.
A packet run the user stopped (stops.py: Ctrl-C of `awp run`, a run cancelled in the UI) gets nothing until
the user resumes it; the cursor keeps it in view, so a resume by `awp resume --lift-only` is picked up.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dagster import (
    DagsterRun,
    DagsterRunStatus,
    DefaultSensorStatus,
    RunRequest,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    sensor,
)

from awp_pipelines.core.decisions.next_launches import Launch, next_launches
from awp_pipelines.core.decisions.stops import StopMarker
from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.dagster_compat.tags import PARENT_RUN_ID_TAG, ROOT_RUN_ID_TAG
from awp_pipelines.orchestration.adoption import adopt_committed
from awp_pipelines.orchestration.asset_job_runs import claim_ended_run, of_packet, unclaimed
from awp_pipelines.orchestration.attempt_config import launch_run_config
from awp_pipelines.orchestration.binding import PacketBinding
from awp_pipelines.orchestration.ended_runs import ended_since
from awp_pipelines.orchestration.history import PacketRunHistory, decision_inputs, packet_run_history
from awp_pipelines.orchestration.naming import recovery_sensor_name
from awp_pipelines.orchestration.reaper import driven_in_process
from awp_pipelines.orchestration.stop_store import StopStore

# Dagster's sensor daemon wakes every 5 s (MIN_INTERVAL_LOOP_TIME) and ticks a sensor only if at least its minimum
# interval has passed since its last tick. An interval of exactly 5 s lost that race about every other wake-up:
# ticks came every 9.7 s (bench/rate_limit.py --daemon). Just under the loop, the sensor ticks on every wake-up.
DAEMON_LOOP_S = 5
INTERVAL_S = 4
TICK_EVERY_S = max(INTERVAL_S, DAEMON_LOOP_S)  # how often the sensor ticks under the daemon
# A launch is one prompt, one step: run in the run worker's own process. A Celery worker's prefork child is
# daemonic and may not start the multiprocess executor's children (parallel.py falls back there too).
IN_PROCESS: dict[str, Any] = {"execution": {"config": {"in_process": {}}}}
_BATCH = 200  # finished runs read per tick; the cursor carries on from the last one


@dataclass
class RecoveryCursor:
    after: float = 0.0  # update time of the last finished run looked at
    waiting: set[str] = field(default_factory=set)  # packet runs with a launch waiting for its backoff
    stopped: set[str] = field(default_factory=set)  # packet runs the user stopped: looked at again once resumed

    @classmethod
    def parse(cls, text: str | None) -> RecoveryCursor:
        if not text:
            return cls()
        data = json.loads(text)
        return cls(float(data.get("after", 0.0)), set(data.get("waiting", [])), set(data.get("stopped", [])))

    def dump(self) -> str:
        return json.dumps({"after": self.after, "waiting": sorted(self.waiting), "stopped": sorted(self.stopped)})


def cancel_marker(run: DagsterRun, ended_at: float) -> StopMarker | None:
    """A run cancelled by the user (the UI's Terminate, GraphQL) stops its packet run. Nothing of AWP's own
    cancels a run (a signal to `awp run` fails its run), so a CANCELED run is always the user's act."""
    if run.status != DagsterRunStatus.CANCELED:
        return None
    return StopMarker(ended_at, "ui_cancel", f"run {run.run_id[:8]} was cancelled")


def launch_tags(binding: PacketBinding, history: PacketRunHistory, launch: Launch) -> dict[str, str]:
    """The run's tags: the Attempt's identity, and Dagster's own parent/root lineage so the UI groups
    a retry, fallback or repair with the run it follows."""
    out = launch.run_tags(history.packet_run)
    if launch.parent_run:
        parent = next((r for r in history.runs if r.run_id == launch.parent_run), None)
        root = parent.tags.get(ROOT_RUN_ID_TAG, parent.run_id) if parent else launch.parent_run
        out.update({PARENT_RUN_ID_TAG: launch.parent_run, ROOT_RUN_ID_TAG: root})
    return out


def recovery_sensor(binding: PacketBinding, job: str, state_root: Path) -> SensorDefinition:
    """`state_root` holds the packet's runner lock (`awp run`'s state dir)."""
    packet = binding.packet

    @sensor(name=recovery_sensor_name(packet), job_name=job, minimum_interval_seconds=INTERVAL_S,
            default_status=DefaultSensorStatus.RUNNING,
            description=f"Retries, fallbacks and repairs of packet {packet.name}, decided by the same function "
                        "as `awp run`; then the prompts whose upstream prompts have completed.")
    def _recover(context: SensorEvaluationContext) -> SensorResult:
        cursor = RecoveryCursor.parse(context.cursor)
        instance = context.instance
        # A run whose worker died unseen (a Celery worker killed, a host lost) is failed by the location's
        # housekeeping sensor (housekeeping.py), once for every packet; this tick or the next launches its retry.
        # Every packet's runs that ended since the cursor, this packet's picked out here: a filter on the packet
        # tag makes the query walk the packet's whole history (1.6x slower at 10,000 past runs than at 100),
        # while status and update time are one index range that only holds what ended since.
        # One read serves every packet's tick of a round (ended_runs.py).
        finished = ended_since(instance, cursor.after, _BATCH, recovery_sensor_name(packet))
        packet_runs = set(cursor.waiting) | cursor.stopped
        after = cursor.after
        stops = StopStore(instance)
        for record in finished:
            after = max(after, record.update_timestamp.timestamp())
            run = record.dagster_run
            if unclaimed(run, binding):  # a run of `__ASSET_JOB` that ended before its first compute tagged it
                run = claim_ended_run(instance, run, binding)
                if tags.PACKET_RUN in run.tags:
                    context.log.info(f"run {run.run_id[:8]} ended before its first compute: it joins packet run "
                                     f"{run.tags.get(tags.PACKET_RUN)}")
            if not of_packet(run, binding, job):
                continue
            packet_run = run.tags.get(tags.PACKET_RUN)
            if packet_run:
                packet_runs.add(packet_run)
                marker = cancel_marker(run, (record.end_time or record.update_timestamp.timestamp()))
                if marker is not None:
                    stops.stop(packet_run, marker)
        requests, waiting, stopped = [], set(), set()
        now = time.time()
        states = stops.states(packet_runs)  # one read: the packet runs left stopped stay in view for good
        for packet_run in sorted(packet_runs):
            if states[packet_run].stopped:
                stopped.add(packet_run)  # the user's stop is a decision: nothing launches until a resume
                continue
            history = packet_run_history(instance, packet_run, binding.keys)
            if driven_in_process(instance, history.runs, state_root):
                waiting.add(packet_run)  # looked at again once its `awp run` has let go
                continue  # its `awp run` launches what comes next: two drivers made a fallback twice
            adopt_committed(instance, binding, history)  # a dead Attempt that committed gets its record first
            inputs = decision_inputs(binding, history)
            outlook = next_launches(inputs, now, history.stopped)
            changed = {i.prompt for i in inputs if i.superseded and i.started == i.superseded}
            for launch in outlook.due:
                if launch.prompt in changed:  # said once: the launch starts the changed prompt's new AgentRun
                    context.log.info(f"packet run {packet_run}: prompt {launch.prompt} changed since its last "
                                     f"Attempt: Attempt {launch.number} starts a new AgentRun of it")
                key = binding.key(launch.prompt)
                requests.append(RunRequest(run_key=launch.attempt(packet_run), job_name=job, asset_selection=[key],
                                           run_config={**launch_run_config(key, launch), **IN_PROCESS},
                                           tags=launch_tags(binding, history, launch)))
            if outlook.waiting:
                waiting.add(packet_run)
        return SensorResult(run_requests=requests, cursor=RecoveryCursor(after, waiting, stopped).dump())

    return _recover
