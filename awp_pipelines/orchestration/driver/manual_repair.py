"""A repair asked for by hand (`awp repair`): which packet run, which Attempt, then one run of it.

The Attempt comes from the pure `launches.repair_launch`; the run carries the launch's tags (and the
person's note as `awp/note`), so the compute follows them exactly as it follows the recovery sensor's.
"""

from __future__ import annotations

from awp_pipelines.core.decisions.agent_run import AgentRunStatus
from awp_pipelines.core.decisions.next_launches import Launch, repair_launch
from awp_pipelines.core.packet.errors import PacketError
from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.orchestration.compile.binding import PacketBinding
from awp_pipelines.orchestration.ledger.history import agent_run_truth, decision_inputs
from awp_pipelines.orchestration.ledger.ledger import Ledger


def plan_repair(ledger: Ledger, binding: PacketBinding, prompt: str, packet_run: str | None,
                note: str | None) -> tuple[str, Launch]:
    """The packet run (given, else the prompt's newest with a record) and the repair Attempt to launch; a
    PacketError says why there is none."""
    root = binding.packet.root
    history = (ledger.history(packet_run, binding.keys) if packet_run
               else ledger.latest_history(binding.packet.name, binding.keys, prompt))
    if history is None:
        raise PacketError(root, f"prompt {prompt} has no Attempt on record to repair",
                          hint=f"run it first: awp run {root} {prompt}")
    [state] = decision_inputs(binding, history, [prompt])
    if state.busy:
        raise PacketError(root, f"a run of prompt {prompt} in packet run {history.packet_run} has not ended",
                          hint="wait for it, or cancel it in the UI")
    launch = repair_launch(state, note)
    if launch is None:
        raise PacketError(root, f"prompt {prompt} has no Attempt on record in packet run {history.packet_run}")
    return history.packet_run, launch


def note_tags(note: str | None) -> dict[str, str]:
    """The note as a run tag: short, and redacted as every tag value is (the tag is all the repair prompt gets
    of it)."""
    return {tags.NOTE: tags.short(note)} if note and note.strip() else {}


def agent_run_now(ledger: Ledger, binding: PacketBinding, packet_run: str, prompt: str) -> AgentRunStatus:
    history = ledger.history(packet_run, binding.keys)
    return agent_run_truth(binding, history, [prompt])[1][prompt]
