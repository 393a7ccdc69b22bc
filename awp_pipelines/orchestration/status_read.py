"""`awp status` read from a Dagster instance (SQLite or Postgres): one packet run, found by run tags, and the
Attempt records in its runs' own events (orchestration/history.py). Nothing scans the whole event log."""

from __future__ import annotations

from pathlib import Path

from dagster import DagsterInstance, RunsFilter

from awp_pipelines import tags
from awp_pipelines.orchestration.history import AgentRunHistory, PacketRunHistory, packet_run_history
from awp_pipelines.orchestration.naming import prompt_key
from awp_pipelines.packet import Packet
from awp_pipelines.status import (
    PromptStatus,
    StatusReport,
    prompt_state,
    run_state,
    totals_of,
    with_live_progress,
)

_NEWEST_RUNS = 20  # the newest runs of the packet looked at for a packet-run tag (a UI launch adds it late)


def newest_packet_run(instance: DagsterInstance, packet: str) -> str | None:
    """The packet run of the packet's newest run that has one (runs are listed newest first)."""
    for record in instance.get_run_records(RunsFilter(tags={tags.PACKET: packet}), limit=_NEWEST_RUNS):
        packet_run = record.dagster_run.tags.get(tags.PACKET_RUN)
        if packet_run:
            return packet_run
    return None


def status_report(instance: DagsterInstance, packet: Packet, packet_run: str | None = None,
                  state_root: Path | None = None) -> StatusReport:
    """`state_root`: where the Attempts write their control files (default `<packet>/.awp`): a running
    Attempt's live progress is read from there."""
    keys = {prompt_key(packet, p.id): p.id for p in packet.prompts}
    packet_run = packet_run or newest_packet_run(instance, packet.name)
    if packet_run is None:
        prompts = [PromptStatus(prompt=p.id, name=p.name, state="not_started") for p in packet.prompts]
        return StatusReport(packet=packet.name, packet_run=None, state="not_started", prompts=prompts,
                            totals=totals_of(prompts, 0))
    history = packet_run_history(instance, packet_run, keys)
    busy, finished = history.busy(keys), history.finished_runs()
    prompts = [_prompt_status(history, busy, finished, p.id, p.name, state_root or packet.root / ".awp")
               for p in packet.prompts]
    return StatusReport(packet=packet.name, packet_run=packet_run, state=run_state(prompts), prompts=prompts,
                        totals=totals_of(prompts, len(history.runs)))


def _prompt_status(history: PacketRunHistory, busy: set[str], finished: set[str], prompt: str,
                   name: str, state_root: Path) -> PromptStatus:
    agent_run_id = tags.agent_run_id(history.packet_run, prompt)
    agent_run = history.agent_runs.get(prompt, AgentRunHistory())
    attempts = with_live_progress(agent_run.summaries(agent_run_id, finished), state_root, history.packet_run, prompt)
    state = prompt_state(attempts)
    if state not in ("running", "completed") and prompt in busy:
        state = "waiting"  # an unfinished run holds it: queued, or waiting for its upstream prompts
    verifier = next((r.verifier for r in reversed(agent_run.records) if r.verifier is not None), None)
    return PromptStatus(prompt=prompt, name=name, state=state, agent_run=agent_run_id if attempts else None,
                        attempts=attempts, verifier=verifier)
