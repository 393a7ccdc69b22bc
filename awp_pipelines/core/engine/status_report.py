"""What `awp status` reports, and the Attempt history rows the asset page shows: pure models, no Dagster.

The JSON Schema of `StatusReport` ships as awp_pipelines/schemas/status.schema.json (`awp schema status`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from awp_pipelines.core.decisions.agent_control import iteration_of, read_progress
from awp_pipelines.core.decisions.agent_run import AgentRunState, PacketRunState
from awp_pipelines.core.engine.attempt_record import AttemptRecord
from awp_pipelines.core.records.agent_files import control_folder
from awp_pipelines.core.records.attempt_lifecycle import Cause
from awp_pipelines.core.records.handoff_record import HandoffResult
from awp_pipelines.core.verifiers.report import VerifierReport

# A prompt of the packet: its AgentRun's state (agent_run.py), or not part of the packet run at all.
PromptWord = AgentRunState | Literal["not_selected"]
RunState = PacketRunState
_STATE_WORDS = ("planned: no Attempt yet (`held` in the reason: an upstream prompt is not completed in this "
                "packet run); queued: launched, its Attempt not started; active: an Attempt runs; waiting: a "
                "retry, fallback, repair or iteration comes next; interrupted: its last Attempt's process died or "
                "was stopped, budget is left and a resume (`awp run --packet-run`) continues it; stopped: the user "
                "stopped the packet run, nothing launches it until resumed; completed; cancelled (a person "
                "cancelled it, or an agent's `finish` made it unneeded); failed; blocked: the agent asked for a "
                "person, its dependents are held; budget_exhausted; not_selected: not part of this packet run.")


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AttemptSummary(_Out):
    """One Attempt of an AgentRun: a recorded one, or one started whose record is missing."""

    model_config = ConfigDict(extra="forbid", frozen=True)  # a fact about an Attempt, like its record

    attempt: str = Field(description="Attempt id: <packet run>.<prompt>.a<number>.")
    number: int = Field(ge=1, description="1-based within the AgentRun.")
    mode: str = Field(description="run, retry, resume, fallback, repair or iterate.")
    reason: str = Field("", description="Why this target was selected (the decision's reason).")
    provider: str = Field(description="Provider name from providers.yaml.")
    account: str | None = Field(None, description="Account name; null when the provider needs none.")
    model: str = Field("", description="Model the Attempt ran on.")
    result: str = Field(description="completed, verification_failed, provider_failed, verifier_fault, "
                        "commit_failed, dirty_tree, tree_tampered, secret_in_work; `interrupted` when its run ended "
                        "with no record; `running` while its run is unfinished.")
    failure_class: str | None = Field(None, description="The failure class when the Attempt did not complete.")
    started_at: str | None = Field(None, description="ISO 8601 start (recorded Attempts).")
    duration_s: float | None = Field(None, description="Wall-clock seconds (recorded Attempts).")
    tokens_in: int = Field(0, ge=0, description="Input tokens the provider reported.")
    tokens_out: int = Field(0, ge=0, description="Output tokens the provider reported.")
    cost_usd: float | None = Field(None, description="Cost the provider reported, if any.")
    dagster_run: str | None = Field(None, description="Id of the Dagster run that executed the Attempt.")
    commits: list[str] = Field(default_factory=list, description="`repo@sha` of each commit it made.")
    adopted: bool = Field(False, description="Its record was written by whoever adopted it: it committed, then its "
                          "process died before the record.")
    progress: str = Field("", description="The agent's latest `awp agent-control progress` report: live while "
                          "the Attempt runs, else its iteration's last; '(stale: …)' when written for another "
                          "iteration.")
    page: str | None = Field(None, description="URL of the Attempt's page (`awp serve`, base from AWP_PAGE_URL): "
                             "its conversation, tool calls, diffs, verifier items and commit.")

    @classmethod
    def of(cls, record: AttemptRecord) -> AttemptSummary:
        ident, target, failure = record.identity, record.target, record.failure or record.provider_failure
        return cls(attempt=ident.attempt_id, number=ident.number, mode=ident.mode, reason=target.reason,
                   provider=target.provider, account=target.account, model=target.model, result=record.result,
                   failure_class=failure.failure_class if failure and not record.completed else None,
                   started_at=record.started_at, duration_s=record.duration_s,
                   tokens_in=record.usage.input_tokens, tokens_out=record.usage.output_tokens,
                   cost_usd=record.usage.cost_usd, dagster_run=ident.dagster_run,
                   commits=[f"{c.repo}@{c.sha}" for c in record.commits if c.sha], adopted=record.adopted,
                   progress=record.control.progress if record.control else "")


class PromptStatus(_Out):
    prompt: str = Field(description="Prompt id.")
    name: str = Field(description="Prompt title.")
    state: PromptWord = Field(description=_STATE_WORDS)
    reason: str = Field("", description="Why it is in that state (the decision's reason, what holds it).")
    cause: Cause | None = Field(None, description="The AgentRun's cause category, when one applies: model_capacity, "
                                "human_wait, workspace_failure, provider_outage, policy_denial, "
                                "cancellation (the seed's lifecycle reasons).")
    role: str | None = Field(None, description="The prompt's agent role (coder, reviewer, …).")
    avoids: list[str] = Field(default_factory=list, description="provider/account pairs this AgentRun never runs "
                              "on: those the coders it reviews used (reviewer independence).")
    agent_run: str | None = Field(None, description="Its current AgentRun's id: <packet run>.<prompt>, and "
                                  "<packet run>.<prompt>.r<n> for the n-th after changes of its definition.")
    attempts: list[AttemptSummary] = Field(default_factory=list, description="Every Attempt, oldest first.")
    verifier: VerifierReport | None = Field(None, description="The last recorded verifier report.")
    superseded: str | None = Field(None, description="The prompt's earlier AgentRun in this packet run, ended "
                                   "because the prompt's definition changed: `cancelled — superseded: …`.")
    superseded_agent_run: str | None = Field(None, description="That earlier AgentRun's id (it differs from "
                                             "`agent_run`).")


class Totals(_Out):
    prompts: int = Field(0, description="Prompts of the packet run (those selected; not_selected ones are not "
                         "counted).")
    completed: int = Field(0, description="Of those, completed.")
    failed: int = Field(0, description="Of those, failed, blocked, cancelled or budget_exhausted.")
    running: int = Field(0, description="Of those, active or queued.")
    attempts: int = Field(0, description="Attempts started, recorded or not.")
    runs: int = Field(0, description="Dagster runs of the packet run.")
    duration_s: float = Field(0.0, description="Sum of the recorded Attempts' durations.")
    tokens_in: int = Field(0, description="Sum of input tokens.")
    tokens_out: int = Field(0, description="Sum of output tokens.")
    cost_usd: float | None = Field(None, description="Sum of reported costs; null when none reported one.")


class StopInfo(_Out):
    """The user's stop standing on the packet run (stops.py)."""

    by: str = Field(description="SIGINT or SIGTERM (to `awp run`), ui_cancel (a run cancelled in the UI), or "
                    "new_packet_run (a new packet run of the packet settled this unfinished one).")
    at: str = Field(description="ISO 8601 time of the stop.")
    reason: str = Field("", description="What was stopped.")
    resumable: int = Field(0, description="Prompts of the packet run that resuming it goes on with.")


class StatusReport(_Out):
    """`awp status --json`: one packet run of one packet, read from the Dagster instance."""

    packet: str = Field(description="Packet name.")
    packet_run: str | None = Field(description="The packet run shown: the newest, or --packet-run; null "
                                   "when the instance holds none for this packet.")
    state: RunState = Field(description="From its AgentRuns: running while one is active, queued, waiting or due; "
                            "stopped / interrupted when a resume would go on (the reason counts them, or names "
                            "the run whose driver is gone with prompts still due); completed "
                            "when all completed; blocked when those that did not complete are blocked; failed; "
                            "not_started when the instance holds no packet run.")
    reason: str = Field("", description="Why, in words (e.g. `resumable: 2 prompts`).")
    stop: StopInfo | None = Field(None, description="The user's stop, while it stands (state `stopped`).")
    prompts: list[PromptStatus] = Field(default_factory=list, description="Every prompt, in packet order.")
    totals: Totals = Field(default_factory=Totals, description="Over the packet run.")
    handoff: list[HandoffResult] = Field(default_factory=list, description="The packet run's hand-off, one per repo "
                                         "with `handoff:` (its pull request's URL), once one was tried.")


def totals_of(prompts: Iterable[PromptStatus], runs: int) -> Totals:
    prompts = [p for p in prompts if p.state != "not_selected"]
    attempts = [a for p in prompts for a in p.attempts]
    costs = [a.cost_usd for a in attempts if a.cost_usd is not None]
    return Totals(prompts=len(prompts), completed=sum(p.state == "completed" for p in prompts),
                  failed=sum(p.state in ("failed", "blocked", "budget_exhausted") or
                             (p.state == "cancelled" and bool(p.attempts)) for p in prompts),
                  running=sum(p.state in ("active", "queued") for p in prompts),
                  attempts=len(attempts), runs=runs, duration_s=round(sum(a.duration_s or 0.0 for a in attempts), 3),
                  tokens_in=sum(a.tokens_in for a in attempts), tokens_out=sum(a.tokens_out for a in attempts),
                  cost_usd=round(sum(costs), 6) if costs else None)


# -- awp watch ------------------------------------------------------------------------------------------------

Violation = Literal["not_running", "progress_stale"]


class CurrentAttempt(_Out):
    prompt: str = Field(description="Prompt id.")
    name: str = Field(description="Prompt title.")
    attempt: str = Field(description="Attempt id.")
    mode: str = Field(description="run, retry, fallback, repair, …")
    target: str = Field(description="provider/account/model.")
    dagster_run: str | None = Field(None, description="The Dagster run it executes in.")
    minutes_quiet: float | None = Field(None, description="Minutes since its latest activity: its run's latest "
                                        "stored event, or its agent's latest event or progress on disk.")
    progress: str = Field("", description="Its agent's latest progress report ('(stale: …)' when written for "
                          "another iteration).")


class RepoActivity(_Out):
    repo: str = Field(description="Repo name from the manifest.")
    dirty_files: int | None = Field(None, description="Changed or untracked files now; null when not a git repo.")
    new_commits: int | None = Field(None, description="Commits since the packet run started.")


class WatchReading(_Out):
    """One look at a packet run (`awp watch --json` prints one per line)."""

    packet: str
    packet_run: str | None
    at: str = Field(description="ISO 8601 time of the reading.")
    state: RunState
    reason: str = Field("", description="Why, in words (the same as `awp status`).")
    prompts: int = Field(description="Prompts the packet run was asked to run.")
    completed: int = Field(description="Of those, completed.")
    agent_runs: dict[str, PromptWord] = Field(default_factory=dict, description="Prompt → its AgentRun's state, "
                                               "the same words as `awp status`.")
    superseded: dict[str, str] = Field(default_factory=dict, description="Prompt → `cancelled (superseded)`: "
                                       "its earlier AgentRun, ended because the prompt's definition changed.")
    agent_run_ids: dict[str, str] = Field(default_factory=dict, description="Prompt → its current AgentRun's id "
                                          "(`<packet run>.<prompt>`, `….r<n>` after a change of its definition).")
    superseded_agent_runs: dict[str, str] = Field(default_factory=dict, description="Prompt → the id of its "
                                                  "earlier AgentRun that `superseded` names.")
    current: list[CurrentAttempt] = Field(default_factory=list, description="Attempts running now.")
    pending: list[str] = Field(default_factory=list, description="Prompts with an Attempt due to launch.")
    minutes_quiet: float | None = Field(None, description="Minutes since the packet run's latest event.")
    repos: list[RepoActivity] = Field(default_factory=list)
    violations: list[Violation] = Field(default_factory=list, description="not_running: work is due and no "
                                        "run is unfinished; progress_stale: a started run stored nothing "
                                        "for longer than the progress timeout.")
    details: list[str] = Field(default_factory=list, description="One line per violation.")


def liveness(started_quiet_s: dict[str, float], unfinished: int, pending: list[str], idle_s: float | None,
             timeout_s: float) -> tuple[list[Violation], list[str]]:
    """From the runs themselves: a started run quiet for longer than the timeout is stale; due work with no
    unfinished run for longer than the timeout means nothing runs it (no daemon, a killed `awp run`)."""
    violations: list[Violation] = []
    details = []
    stale = {run: quiet for run, quiet in started_quiet_s.items() if quiet > timeout_s}
    if stale:
        violations.append("progress_stale")
        details += [f"run {run[:8]} stored nothing for {quiet / 60:.1f} min" for run, quiet in stale.items()]
    if not unfinished and pending and (idle_s is None or idle_s > timeout_s):
        violations.append("not_running")
        details.append(f"no run is unfinished, and {', '.join(pending)} "
                       f"{'is' if len(pending) == 1 else 'are'} due to run")
    return violations, details


def repo_activity(name: str, path: str, packet_run: str) -> RepoActivity:
    """Dirty files now, and the commits the packet run made: those whose AWP-Agent-Run trailer names it
    (exact, where a time window would count a commit made in the same second as the run started)."""
    from awp_pipelines.core.records.workspace import WorkspaceError, changed_paths, commits_naming

    try:  # libgit2: no lock taken from the agent it watches, nothing of the tree run
        dirty: int | None = len(changed_paths(path))
    except (WorkspaceError, OSError):
        dirty = None
    try:
        made: int | None = len(commits_naming(path, f"{packet_run}.", trailer="AWP-Agent-Run"))
    except (WorkspaceError, OSError):
        made = None
    return RepoActivity(repo=name, dirty_files=dirty, new_commits=made)


def with_live_progress(attempts: Sequence[AttemptSummary], state_root: Path, packet_run: str,
                       prompt: str) -> list[AttemptSummary]:
    """The AgentRun's Attempts, each running one with its agent's latest progress record (a record written for
    another iteration than the Attempt's is shown as stale, not dropped)."""
    shown: list[AttemptSummary] = []
    for i, summary in enumerate(attempts):
        if summary.result == "running":
            iteration = iteration_of([a.mode for a in attempts[:i]], summary.mode)
            folder = control_folder(state_root, packet_run, prompt, summary.attempt)
            progress = read_progress(folder / "progress.json", iteration)
            if progress is not None:
                summary = summary.model_copy(update={"progress": progress.shown()})
        shown.append(summary)
    return shown
