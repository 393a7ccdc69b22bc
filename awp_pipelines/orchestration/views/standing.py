"""What the stored history says about a packet's prompts: where each stands in a packet run, its records."""

from __future__ import annotations

from awp_pipelines.core.decisions.agent_run import AgentRunStatus
from awp_pipelines.core.engine.attempt_record import AttemptRecord
from awp_pipelines.core.packet.packet import Packet
from awp_pipelines.orchestration.compile.binding import PacketBinding
from awp_pipelines.orchestration.compile.translator import PacketTranslator
from awp_pipelines.orchestration.ledger.history import agent_run_truth, intent_changes
from awp_pipelines.orchestration.ledger.ledger import Ledger
from awp_pipelines.orchestration.views.status import newest_packet_run

Standing = tuple[str | None, dict[str, AgentRunStatus], list[str]]


def standing(ledger: Ledger, binding: PacketBinding, packet_run: str | None = None) -> Standing:
    """A packet run (`packet_run`, else the packet's newest; None when there is none), its AgentRuns' states
    (what `--remaining` and the upstream check of a selection read) and a line for each prompt whose definition
    changed since its last Attempt there (what a resume says first)."""
    packet_run = packet_run or newest_packet_run(ledger, binding.packet.name)
    if packet_run is None:
        return None, {}, []
    history = ledger.history(packet_run, binding.keys)
    statuses = agent_run_truth(binding, history)[1]
    return packet_run, statuses, intent_changes(binding, history, statuses)


def agent_run_records(ledger: Ledger, packet: PacketBinding | Packet, packet_run: str,
                      prompt_id: str) -> list[AttemptRecord]:
    """The stored records of one AgentRun, oldest first. A bare Packet reads the default translator's keys."""
    keys = packet.keys if isinstance(packet, PacketBinding) else PacketTranslator().asset_keys(packet)
    history = ledger.history(packet_run, keys).agent_runs.get(prompt_id)
    return history.records if history else []
