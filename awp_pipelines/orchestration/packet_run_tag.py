"""The packet run's state on its root run (issue 15 item 7): a "Materialize all" run that failed stays red in
the UI after its retry and repair complete the packet, so each Attempt's run writes the packet run's state
(the one truth, agent_run.py) as a tag on the root run, where the user looks. Written only when it changed:
each write is a run-storage transaction (Dagster's `add_run_tags`: a read, then a write and its commit).

While the packet run runs, the tag says what: each AgentRun active, queued or waiting, with why (issue 26 item 4),
e.g. `running — 02 active (attempt 2 is running); 03 waiting (retry 1/2 …)`. The compute writes it when an
Attempt starts (its own AgentRun active) and once its record is stored (what comes next: a repair, a retry)."""

from __future__ import annotations

from collections.abc import Mapping

from dagster import AssetExecutionContext, DagsterRun

from awp_pipelines.core.decisions.agent_run import AgentRunStatus, packet_run_state
from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.dagster_compat.tags import ROOT_RUN_ID_TAG
from awp_pipelines.orchestration.binding import PacketBinding
from awp_pipelines.orchestration.history import PacketRunHistory, agent_run_truth, packet_run_history, packet_runs

GOING = ("active", "queued", "waiting")  # an AgentRun the packet run still runs: the tag names each


def tag_root_run(context: AssetExecutionContext, binding: PacketBinding, known: PacketRunHistory | None = None,
                 running: tuple[str, int] | None = None) -> None:
    """Once this run's Attempt is stored: the packet run's state on the root run of this run's family. `known`:
    the history with this Attempt in it, computed by the compute; it holds while no other run of the packet run
    started or changed status since it was read (one query tells), else the history is read. `running`: (prompt,
    Attempt number) of an Attempt that just started, `known` the history read before it: its AgentRun is active."""
    run_id = context.run.run_id
    fresh = packet_runs(context.instance, known.packet_run) if known is not None else []
    if known is not None and _unchanged(context, known, fresh):
        history = known
    else:
        run = context.instance.get_run_by_id(run_id)  # fresh: the step adds the packet-run tag late
        packet_run = run.tags.get(tags.PACKET_RUN) if run else None
        if packet_run is None:  # refused before it joined a packet run: nothing to say
            return
        history = packet_run_history(context.instance, packet_run, binding.keys)
        fresh = history.runs
    _, statuses = agent_run_truth(binding, history, exclude_run=run_id)
    if running is not None:
        prompt, number = running
        statuses[prompt] = AgentRunStatus("active", f"attempt {number} is running")
    state = packet_run_tag(statuses)
    root = context.run.tags.get(ROOT_RUN_ID_TAG, run_id)
    stored = next((r for r in fresh if r.run_id == root), None)  # read just now: its tags as they stand
    if stored is None or stored.tags.get(tags.PACKET_RUN_STATE) != state:
        context.instance.add_run_tags(root, {tags.PACKET_RUN_STATE: state})


def _unchanged(context: AssetExecutionContext, known: PacketRunHistory, fresh: list[DagsterRun]) -> bool:
    """Whether the packet run's other runs are the ones `known` holds, in the same statuses."""
    own = context.run.run_id
    then = {(r.run_id, r.status) for r in known.runs if r.run_id != own}
    return {(r.run_id, r.status) for r in fresh if r.run_id != own} == then


def packet_run_tag(statuses: Mapping[str, AgentRunStatus]) -> str:
    """The tag's value: the packet run's state word, and while it runs, what runs and what comes next."""
    state, _ = packet_run_state(statuses)
    now = [f"{prompt} {status.state} ({status.reason})" if status.reason else f"{prompt} {status.state}"
           for prompt, status in statuses.items() if status.state in GOING]
    return f"{state} — {'; '.join(now)}" if state == "running" and now else state
