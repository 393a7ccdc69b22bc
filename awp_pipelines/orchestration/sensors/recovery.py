"""The recovery sensor: under the daemon, what `awp run` does in process. One per code location, for every
packet of it (a packet alone in its definitions, as a `PacketComponent`, has one of its own).

Each tick reads the runs that ended since its cursor once, for every packet (`Ledger.ended_runs`), gives each to
its packet by its job (a run of Dagster's own asset job by the prompts it selected; one that ended untagged is
claimed first: `Ledger.claim_run`), and looks at those packet runs and the ones still waiting for a backoff or
stopped: it passes over those a live `awp run` drives (it launches their next Attempts itself), asks
`next_launches` what comes next, and returns each due launch as a `RunRequest` of one prompt of its packet's job,
the launch itself its run config (attempt_config.py). A packet with nothing new costs nothing beyond the shared
read. The run key is the Attempt's id, so a launch is requested once however often it is computed.
A packet run the user stopped (stops.py: Ctrl-C of `awp run`, a run cancelled in the UI) gets nothing until
the user resumes it; the cursor keeps it in view, so a resume by `awp resume --lift-only` is picked up.
A packet run with nothing left to launch whose AgentRuns all ended is handed off (views/handoff.py) when its
packet has a `handoff:` repo: the tick that saw its last run end pushes its branch and opens the pull request.

One sensor rather than one per packet: the daemon's fixed cost per sensor tick (its gRPC call to the code
server, the tick's state and writes; 65-160 ms of CPU each) made 200 packets' sensors most of a core.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

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
from awp_pipelines.orchestration.compile.attempt_config import launch_run_config
from awp_pipelines.orchestration.compile.binding import PacketBinding
from awp_pipelines.orchestration.ledger.factory import tick_ledger
from awp_pipelines.orchestration.ledger.history import PacketRunHistory, decision_inputs
from awp_pipelines.orchestration.ledger.ledger import Ledger
from awp_pipelines.orchestration.ledger.liveness import driven_in_process
from awp_pipelines.orchestration.sensors.asset_job_runs import claimant, of_packet
from awp_pipelines.orchestration.sensors.recovery_cursor import PacketCursor, RecoveryCursor
from awp_pipelines.orchestration.views.handoff import hand_off_packet_run
from awp_pipelines.orchestration.views.status import has_handoff

if TYPE_CHECKING:
    from awp_pipelines.dagster_compat.execution import UnresolvedAssetJobDefinition

# Dagster's sensor daemon wakes every 5 s (MIN_INTERVAL_LOOP_TIME) and ticks a sensor only if at least its minimum
# interval has passed since its last tick. An interval of exactly 5 s lost that race about every other wake-up:
# ticks came every 9.7 s (bench/rate_limit.py --daemon). Just under the loop, the sensor ticks on every wake-up.
DAEMON_LOOP_S = 5
INTERVAL_S = 4
TICK_EVERY_S = max(INTERVAL_S, DAEMON_LOOP_S)  # how often the sensor ticks under the daemon
# A launch is one prompt, one step: run in the run worker's own process. A Celery worker's prefork child is
# daemonic and may not start the multiprocess executor's children (parallel.py falls back there too).
IN_PROCESS: dict[str, Any] = {"execution": {"config": {"in_process": {}}}}
_BATCH = 200  # ended runs read per tick; the cursor carries on from the last one
_NAMED = 5  # packets named in the sensor's description; the rest counted


@dataclass(frozen=True)
class ServedPacket:
    """What the sensor needs of one packet: its binding, its job (the launches' target) and `state_root`, which
    holds its runner lock (`awp run`'s state dir)."""

    binding: PacketBinding
    job: UnresolvedAssetJobDefinition
    state_root: Path

    @property
    def name(self) -> str:
        return self.binding.packet.name


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


def served_description(packets: Sequence[ServedPacket]) -> str:
    names = [p.name for p in packets]
    shown = ", ".join(names[:_NAMED]) + (f" and {len(names) - _NAMED} more" if len(names) > _NAMED else "")
    return (f"Retries, fallbacks and repairs of {len(names)} packet(s): {shown or 'none'}; then the prompts whose "
            "upstream prompts have completed. Decided by the same function as `awp run`.")


def recovery_sensor(packets: Sequence[ServedPacket], name: str) -> SensorDefinition:
    """One sensor for every packet of `packets` (their names unique, as their jobs' are)."""
    served = {p.name: p for p in packets}

    @sensor(name=name, jobs=[p.job for p in packets], minimum_interval_seconds=INTERVAL_S,
            default_status=DefaultSensorStatus.RUNNING, description=served_description(packets))
    def _recover(context: SensorEvaluationContext) -> SensorResult:
        return recovery_tick(tick_ledger(context), served, context.cursor, context.log.info)

    return _recover


def recovery_tick(ledger: Ledger, served: Mapping[str, ServedPacket], cursor_text: str | None,
                  say: Callable[[str], object], now: float | None = None) -> SensorResult:
    """One tick of the sensor on the ledger it is handed: its run requests and its next cursor."""
    cursor = RecoveryCursor.parse(cursor_text)
    # A run whose worker died unseen (a Celery worker killed, a host lost) is failed by the location's
    # housekeeping sensor (housekeeping.py); this tick or the next launches its retry.
    in_view = {name: c.in_view() for name, c in cursor.packets.items() if name in served}
    after = _take_ended(say, ledger, served, cursor.after, in_view)
    states = ledger.stop_states(set[str]().union(*in_view.values()))  # one read for every packet
    requests: list[RunRequest] = []
    packets: dict[str, PacketCursor] = {}
    now = time.time() if now is None else now
    for name in sorted(in_view):
        stopped = {r for r in in_view[name] if states[r].stopped}  # a decision: nothing until a resume
        waiting: set[str] = set()
        for packet_run in sorted(in_view[name] - stopped):
            due, waits = _launches(say, ledger, served[name], packet_run, now)
            requests.extend(due)
            if waits:
                waiting.add(packet_run)
        packets[name] = PacketCursor(waiting, stopped)
    return SensorResult(run_requests=requests, cursor=RecoveryCursor(after, packets).dump())


def _take_ended(say: Callable[[str], object], ledger: Ledger, served: Mapping[str, ServedPacket],
                after: float, in_view: dict[str, set[str]]) -> float:
    """The runs that ended since `after`, read once for every packet: each served packet's packet runs added to
    `in_view`, a cancelled run's stop stored. Returns the update time the cursor moves to."""
    bindings = [p.binding for p in served.values()]
    by_job = {p.job.name: name for name, p in served.items()}
    for ended in ledger.ended_runs(after, _BATCH):
        after = max(after, ended.updated_at)
        run = ended.run
        owner = claimant(run, bindings)  # a run of `__ASSET_JOB` that ended before its first compute tagged it
        if owner is not None:
            run = _claim(say, ledger, run, owner)
        packet_run = run.tags.get(tags.PACKET_RUN)
        # Its packet: the packet job it ran, else (one of Dagster's asset jobs) the packet whose prompts it selected.
        packet = by_job.get(run.job_name) or next(
            (name for name, p in served.items() if of_packet(run, p.binding, p.job.name)), None)
        if packet is None or not packet_run:
            continue
        in_view.setdefault(packet, set()).add(packet_run)
        marker = cancel_marker(run, ended.ended_at or ended.updated_at)
        if marker is not None:
            ledger.stop(packet_run, marker)
    return after


def _claim(say: Callable[[str], object], ledger: Ledger, run: DagsterRun, owner: PacketBinding) -> DagsterRun:
    claimed = ledger.claim_run(run.run_id, owner.packet.name) or run
    if claimed.tags.get(tags.PACKET_RUN):
        say(f"run {run.run_id[:8]} ended before its first compute: it joins packet run "
                         f"{claimed.tags.get(tags.PACKET_RUN)} of packet {owner.packet.name}")
    return claimed


def _launches(say: Callable[[str], object], ledger: Ledger, packet: ServedPacket, packet_run: str,
              now: float) -> tuple[list[RunRequest], bool]:
    """The due launches of one packet run as run requests of its packet's job, and whether one waits for its
    backoff (or for the `awp run` that drives it to let go)."""
    binding = packet.binding
    history = ledger.history(packet_run, binding.keys)
    if driven_in_process(ledger.runners([run.run_id for run in history.runs]), packet.state_root):
        return [], True  # its `awp run` launches what comes next: two drivers made a fallback twice
    ledger.adopt(binding, history)  # a dead Attempt that committed gets its record first
    inputs = decision_inputs(binding, history)
    outlook = next_launches(inputs, now, history.stopped)
    changed = {i.prompt for i in inputs if i.superseded and i.started == i.superseded}
    requests = []
    for launch in outlook.due:
        if launch.prompt in changed:  # said once: the launch starts the changed prompt's new AgentRun
            say(f"packet run {packet_run}: prompt {launch.prompt} changed since its last "
                             f"Attempt: Attempt {launch.number} starts a new AgentRun of it")
        key = binding.key(launch.prompt)
        attempt = history.attempt_of(launch.prompt, launch.number, binding.intents[launch.prompt])
        requests.append(RunRequest(run_key=attempt, job_name=packet.job.name,
                                   asset_selection=[key], run_config={**launch_run_config(key, launch), **IN_PROCESS},
                                   tags=launch_tags(binding, history, launch)))
    if outlook.idle and has_handoff(binding.packet):
        # Nothing comes next: if every AgentRun ended, the packet run's work is handed off (once it succeeded).
        for result in hand_off_packet_run(ledger, binding, packet_run, automatic=True):
            say(f"packet run {packet_run}: hand-off: {result.line()}")
    return requests, bool(outlook.waiting)
