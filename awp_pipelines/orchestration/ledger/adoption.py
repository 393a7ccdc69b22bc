"""An Attempt that committed and then died before its record was stored is adopted: its commit (whose
`AWP-Attempt` trailer names it) is the proof that its work exists and met the contract, so it is never
redone. Whoever adopts it — `awp run`, the recovery sensor, the next Attempt's compute — stores the record it
never wrote, marked `adopted` with the evidence, in the dead Attempt's own run: from then on every reader
(history, `awp status`, the asset page) sees one completed Attempt, and nothing shows it twice.

It runs on any ledger (`Ledger.adopt` calls it with itself): what it reads and stores are the ledger's own
operations, so its promise (ledger.py) holds on the instance and in memory alike.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from awp_pipelines.core.decisions.agent_run import AgentRunStatus
from awp_pipelines.core.engine.attempt_record import AttemptIdentity, AttemptRecord, AttemptTarget
from awp_pipelines.core.records.committer import CommitResult
from awp_pipelines.core.records.workspace import WorkspaceError, commit_of_attempt, git
from awp_pipelines.orchestration.compile.binding import PacketBinding
from awp_pipelines.orchestration.compile.metadata import record_metadata
from awp_pipelines.orchestration.ledger.history import PacketRunHistory
from awp_pipelines.orchestration.ledger.ledger import Ledger
from awp_pipelines.orchestration.ledger.reaper import OUTAGE_MARK
from awp_pipelines.orchestration.ledger.runners import runner_alive

ADOPTED_REASON = "adopted: committed before its process died"
# The process lived on, but the instance's database failed: its record (and its run's end) was never stored.
OUTAGE_REASON = "adopted: committed, but its record was not stored while the instance's database was down"


def adopt_committed(ledger: Ledger, binding: PacketBinding, history: PacketRunHistory) -> list[str]:
    """Store the record of every started Attempt of the packet run whose run ended with no record and whose
    commit exists. `history` is updated in place. The Attempt ids adopted."""
    finished = history.finished_runs()
    adopted = []
    for prompt, agent_run in history.agent_runs.items():
        recorded = {r.identity.number for r in agent_run.records}
        for number, (run_id, mode, target) in sorted(agent_run.started.items()):
            if number in recorded or run_id not in finished:
                continue
            ident = history.attempt_of(prompt, number)
            evidence = _commits_of(binding, prompt, ident)
            if not evidence:
                continue
            plan = binding.plans[prompt]
            reason = _why_unrecorded(ledger, run_id)
            spec = binding.catalog.providers.get(target.provider) if binding.catalog else None
            when = min(at for _, at in evidence.values())
            record = AttemptRecord(
                identity=AttemptIdentity(attempt_id=ident, agent_run=history.agent_run_of(prompt, number),
                                         number=number, packet=binding.packet.name, packet_run=history.packet_run,
                                         prompt=prompt, mode=mode, dagster_run=run_id),
                target=AttemptTarget(provider=target.provider, provider_kind=spec.kind if spec else "unknown",
                                     account=target.account, model=target.model or "", effort=target.effort,
                                     reason=reason),
                role=plan.agent, prompt_name=binding.packet.prompt(prompt).name,
                workspace={r.name: r.path for r in plan.repos}, cwd=plan.cwd, checkpoint={}, started_at=when,
                ended_at=when, duration_s=0.0, result="completed",
                commits=[CommitResult(repo=repo, status="committed", sha=sha) for repo, (sha, _) in evidence.items()],
                adopted=True, evidence={repo: f"{sha} (AWP-Attempt: {ident})" for repo, (sha, _) in evidence.items()})
            _store(ledger, binding, prompt, run_id, record, reason)
            agent_run.records.append(record)
            agent_run.records.sort(key=lambda r: r.identity.number)
            adopted.append(ident)
    return adopted


def _why_unrecorded(ledger: Ledger, run_id: str) -> str:
    """Why the Attempt's record is missing: the database failed under a process that lived on (the `awp run`
    that ran it is alive, adopting it now; or its run's end was stored in end_run's words), else its process
    died."""
    runner = ledger.runners([run_id]).get(run_id)
    if runner is not None and runner_alive(runner):
        return OUTAGE_REASON
    return OUTAGE_REASON if OUTAGE_MARK in (ledger.why_failed(run_id) or "") else ADOPTED_REASON


def _commits_of(binding: PacketBinding, prompt: str, attempt: str) -> dict[str, tuple[str, str]]:
    """Target repo → (sha, commit time) of the commit whose trailer names the Attempt."""
    found = {}
    for repo in binding.plans[prompt].repos:
        path = Path(repo.path)
        try:
            sha = commit_of_attempt(path, attempt) if (path / ".git").exists() else None
            if sha:
                found[repo.name] = (sha, git(path, "show", "-s", "--format=%cI", sha).stdout.strip())
        except WorkspaceError:
            continue
    return {name: (sha, _iso(at)) for name, (sha, at) in found.items()}


def _iso(text: str) -> str:
    try:
        return datetime.fromisoformat(text).astimezone(UTC).isoformat(timespec="milliseconds")
    except ValueError:
        return datetime.now(UTC).isoformat(timespec="milliseconds")


def _store(ledger: Ledger, binding: PacketBinding, prompt: str, run_id: str, record: AttemptRecord,
           reason: str) -> None:
    """The record goes into the dead Attempt's own run (an ended run's log still takes events): history reads
    a packet run's events by its runs, and the asset page shows the materialization with that run."""
    shown = record_metadata(record, "", (), AgentRunStatus("completed", reason).text)
    ledger.record_attempt(run_id, binding.key(prompt), record, shown=shown,
                          description=f"Attempt {record.identity.attempt_id}: {reason}")
