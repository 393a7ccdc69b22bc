"""`awp watch` readings from the ledger it is handed (a Dagster instance's, or the memory's): liveness from the runs
themselves (their status and the age of their latest event) and from what the decision function says is due —
the daemon's view, whoever launches."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

from dagster import DagsterRunStatus

from awp_pipelines.core.decisions.next_launches import next_launches
from awp_pipelines.core.engine.status_report import (
    AttemptSummary,
    CurrentAttempt,
    WatchReading,
    liveness,
    repo_activity,
    with_live_progress,
)
from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.core.records.agent_files import last_activity
from awp_pipelines.orchestration.compile.binding import PacketBinding
from awp_pipelines.orchestration.ledger.adoption import lost_commits
from awp_pipelines.orchestration.ledger.history import (
    AgentRunHistory,
    agent_run_truth,
    current_ids,
    driven_state,
    superseded_ids,
    superseded_runs,
)
from awp_pipelines.orchestration.ledger.ledger import Ledger
from awp_pipelines.orchestration.views.status import newest_packet_run


def watch_reading(ledger: Ledger, binding: PacketBinding, packet_run: str | None,
                  timeout_min: float, now: float | None = None, state_root: Path | None = None) -> WatchReading:
    """`state_root`: where the Attempts write their event and control files (default `<packet>/.awp`)."""
    now = time.time() if now is None else now
    packet = binding.packet
    state_root = state_root or packet.root / ".awp"
    at = datetime.fromtimestamp(now, UTC).isoformat(timespec="seconds")
    packet_run = packet_run or newest_packet_run(ledger, packet.name)
    if packet_run is None:
        return WatchReading(packet=packet.name, packet_run=None, at=at, state="not_started",
                            prompts=len(packet.prompts), completed=0)
    history = ledger.history(packet_run, binding.keys)
    lost_commits(binding, history)  # as `awp status` shows it: what git holds and the ledger lost, adopted, not stored
    finished = history.finished_runs()
    states, statuses = agent_run_truth(binding, history)
    outlook = next_launches(list(states.values()), now, history.stopped)
    # A run whose driver is gone (kill -9 of its `awp run`, a silent worker) is not running, whatever its stored
    # status says: the history counts it ended (liveness.py), as status and the page do.
    unfinished = history.unfinished_runs()
    stored = ledger.last_event_at([run.run_id for run in unfinished])
    last_event = {run.run_id: stored.get(run.run_id) for run in unfinished}
    running: list[tuple[str, AttemptSummary]] = []
    for state in states.values():
        agent_run = history.agent_runs.get(state.prompt, AgentRunHistory())
        summaries = agent_run.summaries(tags.agent_run_id(packet_run, state.prompt), finished)
        running += [(state.prompt, s) for s in with_live_progress(summaries, state_root, packet_run, state.prompt)
                    if s.result == "running"]
    for prompt, summary in running:  # the agent's own files: activity however little reached the run's log
        seen = last_activity(state_root, packet_run, prompt, summary.attempt)
        run_id = summary.dagster_run or ""
        if seen is not None and run_id in last_event:
            last_event[run_id] = max(last_event[run_id] or seen, seen)
    started = {run.run_id for run in unfinished if run.status == DagsterRunStatus.STARTED}
    quiet = {run_id: now - at for run_id, at in last_event.items() if at is not None and run_id in started}
    ends = list(history.ended_at.values())
    idle = now - max(ends) if ends and not unfinished else None
    pending = sorted({launch.prompt for launch in outlook.due})
    violations, details = liveness(quiet, len(unfinished), pending, idle, timeout_min * 60)
    if history.gone and "not_running" not in violations:
        violations.append("not_running")
        details += [f"run {run_id[:8]}: {why}" for run_id, why in history.gone.items()]
    current = []
    for prompt, summary in running:
        run_quiet = quiet.get(summary.dagster_run or "")
        current.append(CurrentAttempt(
            prompt=prompt, name=packet.prompt(prompt).name, attempt=summary.attempt, mode=summary.mode,
            target="/".join(p for p in (summary.provider, summary.account, summary.model) if p),
            dagster_run=summary.dagster_run, progress=summary.progress,
            minutes_quiet=round(run_quiet / 60, 1) if run_quiet is not None else None))
    completed = sum(s.state == "completed" for s in statuses.values())
    repos = [repo_activity(name, str(repo.path), packet_run) for name, repo in packet.repos.items()]
    overall, reason = driven_state(history, statuses)
    quiet_all = [now - t for t in last_event.values() if t is not None]
    return WatchReading(packet=packet.name, packet_run=packet_run, at=at, state=overall, reason=reason,
                        prompts=len(states), completed=completed,
                        agent_runs={p: s.state for p, s in statuses.items()}, current=current, pending=pending,
                        superseded={p: f"{s.state} (superseded)" for p, s in superseded_runs(binding, history,
                                                                                              states).items()},
                        agent_run_ids=current_ids(history, states),
                        superseded_agent_runs=superseded_ids(history, states),
                        minutes_quiet=round(min(quiet_all) / 60, 1) if quiet_all else None, repos=repos,
                        violations=violations, details=details)
