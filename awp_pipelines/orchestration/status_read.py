"""`awp status` read from a Dagster instance (SQLite or Postgres): one packet run, found by run tags, and the
Attempt records in its runs' own events (orchestration/history.py). Nothing scans the whole event log."""

from __future__ import annotations

from datetime import UTC, datetime

from dagster import DagsterInstance, RunsFilter

from awp_pipelines import tags
from awp_pipelines.orchestration.history import AgentRunHistory, PacketRunHistory, packet_run_history
from awp_pipelines.orchestration.naming import prompt_key
from awp_pipelines.orchestration.stop_store import StopStore
from awp_pipelines.packet import Packet
from awp_pipelines.status import (
    PromptStatus,
    StatusReport,
    StopInfo,
    prompt_state,
    run_state,
    stopped_view,
    totals_of,
)

_NEWEST_RUNS = 20  # the newest runs of the packet looked at for a packet-run tag (a UI launch adds it late)


def newest_packet_run(instance: DagsterInstance, packet: str) -> str | None:
    """The packet run of the packet's newest run that has one (runs are listed newest first)."""
    for record in instance.get_run_records(RunsFilter(tags={tags.PACKET: packet}), limit=_NEWEST_RUNS):
        packet_run = record.dagster_run.tags.get(tags.PACKET_RUN)
        if packet_run:
            return packet_run
    return None


def status_report(instance: DagsterInstance, packet: Packet, packet_run: str | None = None) -> StatusReport:
    keys = {prompt_key(packet, p.id): p.id for p in packet.prompts}
    packet_run = packet_run or newest_packet_run(instance, packet.name)
    if packet_run is None:
        prompts = [PromptStatus(prompt=p.id, name=p.name, state="not_started") for p in packet.prompts]
        return StatusReport(packet=packet.name, packet_run=None, state="not_started", prompts=prompts,
                            totals=totals_of(prompts, 0))
    history = packet_run_history(instance, packet_run, keys)
    busy, finished = history.busy(keys), history.finished_runs()
    prompts = [_prompt_status(history, busy, finished, p.id, p.name) for p in packet.prompts]
    marker, stop = StopStore(instance).marker(packet_run), None
    if marker is not None and not busy:
        prompts, resumable = stopped_view(prompts, history.scope(packet, keys))
        stop = StopInfo(by=marker.by, at=datetime.fromtimestamp(marker.at, UTC).isoformat(), reason=marker.reason,
                        resumable=resumable)
    return StatusReport(packet=packet.name, packet_run=packet_run, state=run_state(prompts), prompts=prompts,
                        totals=totals_of(prompts, len(history.runs)), stop=stop if run_state(prompts) == "stopped"
                        else None)


def _prompt_status(history: PacketRunHistory, busy: set[str], finished: set[str], prompt: str,
                   name: str) -> PromptStatus:
    agent_run_id = tags.agent_run_id(history.packet_run, prompt)
    agent_run = history.agent_runs.get(prompt, AgentRunHistory())
    attempts = agent_run.summaries(agent_run_id, finished)
    state = prompt_state(attempts)
    if state not in ("running", "completed") and prompt in busy:
        state = "waiting"  # an unfinished run holds it: queued, or waiting for its upstream prompts
    verifier = next((r.verifier for r in reversed(agent_run.records) if r.verifier is not None), None)
    return PromptStatus(prompt=prompt, name=name, state=state, agent_run=agent_run_id if attempts else None,
                        attempts=attempts, verifier=verifier)
