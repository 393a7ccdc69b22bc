"""`awp status` read from the ledger it is handed (a Dagster instance's, SQLite or Postgres, or the memory's): one
packet run, found by the packet index, and the Attempt records in its runs' own events (ledger/history.py).
Nothing scans the whole event log."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from awp_pipelines.core.decisions.agent_run import AgentRunStatus, DecisionInput, resumable_prompts
from awp_pipelines.core.engine.status_report import PromptStatus, StatusReport, StopInfo, totals_of, with_live_progress
from awp_pipelines.core.packet.packet import Packet
from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.orchestration.compile.binding import PacketBinding
from awp_pipelines.orchestration.compile.page_link import attempt_page_url
from awp_pipelines.orchestration.ledger.adoption import lost_commits
from awp_pipelines.orchestration.ledger.history import (
    AgentRunHistory,
    PacketRunHistory,
    agent_run_truth,
    driven_state,
    superseded_ids,
    superseded_runs,
)
from awp_pipelines.orchestration.ledger.ledger import Ledger


def has_handoff(packet: Packet) -> bool:
    """Whether a repo of the packet hands its work off: only then is a hand-off read or written."""
    return any(repo.handoff is not None for repo in packet.repos.values())


def newest_packet_run(ledger: Ledger, packet: str) -> str | None:
    """The packet run a run of the packet joined last."""
    return next(iter(ledger.packet_runs(packet)), None)


def status_report(ledger: Ledger, binding: PacketBinding, packet_run: str | None = None,
                  state_root: Path | None = None) -> StatusReport:
    """`state_root`: where the Attempts write their control files (default `<packet>/.awp`): a running
    Attempt's live progress is read from there."""
    packet = binding.packet
    packet_run = packet_run or newest_packet_run(ledger, packet.name)
    if packet_run is None:
        prompts = [PromptStatus(prompt=p.id, name=p.name, state="not_selected") for p in packet.prompts]
        return StatusReport(packet=packet.name, packet_run=None, state="not_started", prompts=prompts,
                            totals=totals_of(prompts, 0))
    history = ledger.history(packet_run, binding.keys)
    lost_commits(binding, history)  # what git holds and the ledger lost is shown adopted, and not stored: a read
    states, statuses = agent_run_truth(binding, history)
    state, reason = driven_state(history, statuses)
    finished = history.finished_runs()
    adopted = {s.prompt: {f.number for f in s.facts if f.result == "completed"} for s in states.values()}
    root = state_root or packet.root / ".awp"
    superseded = superseded_runs(binding, history, states)
    earlier = superseded_ids(history, states)
    prompts = [_prompt_status(history, finished, statuses.get(p.id), adopted.get(p.id, set()), p.id, p.name, root,
                              states[p.id].generation if p.id in states else 1)
               .model_copy(update={**_independence(binding, states.get(p.id), p.id),
                                   "superseded": superseded[p.id].text if p.id in superseded else None,
                                   "superseded_agent_run": earlier.get(p.id)})
               for p in packet.prompts]
    marker = history.stopped
    stop = None if marker is None or state != "stopped" else StopInfo(
        by=marker.by, at=datetime.fromtimestamp(marker.at, UTC).isoformat(), reason=marker.reason,
        resumable=len(resumable_prompts(statuses)))
    return StatusReport(packet=packet.name, packet_run=packet_run, state=state, reason=reason, prompts=prompts,
                        totals=totals_of(prompts, len(history.runs)), stop=stop,
                        handoff=ledger.handoff(packet.name, packet_run) if has_handoff(packet) else [])


def _independence(binding: PacketBinding, state: DecisionInput | None, prompt: str) -> dict[str, object]:
    """The prompt's role and the provider/account pairs its chain is kept off (a reviewer's coders')."""
    avoided = sorted(f"{p}/{a or 'own login'}" for p, a in state.chain.excluded) if state is not None else []
    return {"role": binding.plans[prompt].role if prompt in binding.plans else None, "avoids": avoided}


def _prompt_status(history: PacketRunHistory, finished: set[str], status: AgentRunStatus | None,
                   completed: set[int], prompt: str, name: str, state_root: Path, generation: int) -> PromptStatus:
    agent_run_id = tags.agent_run_id(history.packet_run, prompt, generation)  # its current AgentRun
    agent_run = history.agent_runs.get(prompt, AgentRunHistory())
    first = tags.agent_run_id(history.packet_run, prompt)
    attempts = [a.model_copy(update={"page": attempt_page_url(a.attempt)}) for a in with_live_progress(
        agent_run.summaries(first, finished, committed=completed), state_root, history.packet_run, prompt)]
    verifier = next((r.verifier for r in reversed(agent_run.records) if r.verifier is not None), None)
    return PromptStatus(prompt=prompt, name=name, state=status.state if status else "not_selected",
                        reason=status.reason if status else "not part of this packet run",
                        cause=status.cause if status else None,
                        agent_run=agent_run_id if attempts else None, attempts=attempts, verifier=verifier)
