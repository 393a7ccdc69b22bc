"""An Attempt that committed and then died before its record was stored is adopted: its commit (whose
`AWP-Attempt` trailer names it) is the proof that its work exists and met the contract, so it is never
redone. Whoever adopts it — `awp run`, the recovery sensor, the next Attempt's compute — stores the record it
never wrote, marked `adopted` with the evidence, in the dead Attempt's own run: from then on every reader
(history, `awp status`, the asset page) sees one completed Attempt, and nothing shows it twice.

A database that lost its last commits (PostgreSQL with `synchronous_commit=off` killed, a restore from a
backup) can forget an Attempt whole, its start marker with its record, while git keeps its commit. Such an
Attempt is adopted from its commit alone (`lost_commits`): its start marker and record are stored again, so the
committed prompt is not run a second time; `awp status` shows it the same way without storing anything.

No packet run is left behind either (`settle_earlier_packet_runs`): a plain `awp run PACKET` after a `kill -9` (or
a crash, or an interrupted run) starts a new packet run; the killed one would otherwise read `running (due: 02)`
forever, with nothing driving it, and an Attempt that committed before its process died would never get its
record. So before the new packet run starts (under the packet's lock, dead runners already reaped), each earlier
packet run of the packet gets its committed Attempts adopted, and one still unfinished is stopped by the new packet
run: nothing launches it (the sensor honours stops) and every view says `stopped`, resumable with `--packet-run`
or `awp resume`. A packet run is read once per change: its run count is stored when it is settled, and it is read
again only when it has gained runs since (a resume of it).

Both run on any ledger (`Ledger.adopt` and `Ledger.settle` call them with itself): what they read and store are
the ledger's own operations, so their promises (ledger.py) hold on the instance and in memory alike.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

from awp_pipelines.core.decisions.agent_run import UNFINISHED_BY_HAND, AgentRunStatus, packet_run_state
from awp_pipelines.core.decisions.policy import Target
from awp_pipelines.core.decisions.stops import StopMarker
from awp_pipelines.core.engine.attempt_record import AttemptIdentity, AttemptRecord, AttemptTarget
from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.core.records.committer import CommitResult
from awp_pipelines.core.records.workspace import WorkspaceError, commit_of_attempt, commits_naming, git
from awp_pipelines.orchestration.compile.binding import PacketBinding
from awp_pipelines.orchestration.compile.metadata import record_metadata
from awp_pipelines.orchestration.ledger.history import (
    ATTEMPT_STARTED,
    AgentRunHistory,
    PacketRunHistory,
    agent_run_truth,
)
from awp_pipelines.orchestration.ledger.ledger import Ledger
from awp_pipelines.orchestration.ledger.liveness import OUTAGE_MARK, runner_alive

ADOPTED_REASON = "adopted: committed before its process died"
# The process lived on, but the instance's database failed: its record (and its run's end) was never stored.
OUTAGE_REASON = "adopted: committed, but its record was not stored while the instance's database was down"
# The database forgot the Attempt whole (lost commits): only its commit's trailers say it ran.
LOST_REASON = "adopted: committed, but the instance's database had lost its start and record"
_UNFINISHED = frozenset({"running", *UNFINISHED_BY_HAND})


def adopt_committed(ledger: Ledger, binding: PacketBinding, history: PacketRunHistory) -> list[str]:
    """Store the record of every started Attempt of the packet run whose run ended with no record and whose
    commit exists, and the start and record of every Attempt the ledger lost whole whose commit exists
    (`lost_commits`). `history` is updated in place. The Attempt ids adopted."""
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
            reason = _why_unrecorded(ledger, run_id)
            record = _adopted(binding, history, prompt, (ident, history.agent_run_of(prompt, number), number), mode,
                              run_id, target, reason, evidence)
            _store(ledger, binding, prompt, run_id, record, reason)
            agent_run.records.append(record)
            agent_run.records.sort(key=lambda r: r.identity.number)
            adopted.append(ident)
    for prompt, run_id, record in lost_commits(binding, history):
        ran_on = record.target
        ledger.record_started(run_id, binding.key(prompt), {
            tags.EVENT: ATTEMPT_STARTED, tags.ATTEMPT: record.identity.attempt_id,
            tags.ATTEMPT_NUMBER: record.identity.number, tags.MODE: record.identity.mode,
            tags.PROVIDER: ran_on.provider, tags.MODEL: ran_on.model, tags.ACCOUNT: ran_on.account})
        _store(ledger, binding, prompt, run_id, record, LOST_REASON)
        adopted.append(record.identity.attempt_id)
    return adopted


def lost_commits(binding: PacketBinding, history: PacketRunHistory) -> list[tuple[str, str, AttemptRecord]]:
    """The Attempts of the packet run that git holds a commit of while the ledger has neither their start
    marker nor their record (it lost its last commits), as (prompt, run to store them in, adopted record): read
    from the trailers, one `git log` per repo, and only for prompts the ledger has not seen completed. `history`
    is updated in place (a view shows them so and stores nothing). One whose trailer names a run still driven
    is left to that run. Stored in: the run the trailer names, else the packet run's newest; a packet run the
    ledger has no run of has nowhere to keep them (its next run will)."""
    history_of = history.agent_runs
    open_prompts = [p for p in binding.plans
                    if not any(r.result == "completed" for r in history_of.get(p, AgentRunHistory()).records)]
    if not open_prompts or not history.runs:
        return []
    runs = [r.run_id for r in history.runs]  # newest first, as Dagster lists them
    # A run still driven stores its own records: its Attempt is not lost, only not ended yet.
    driven = {r.run_id for r in history.unfinished_runs()}
    prefix = f"{history.packet_run}."
    in_repo: dict[str, list[tuple[str, str, dict[str, str]]]] = {}
    found: dict[tuple[str, int], tuple[dict[str, str], dict[str, tuple[str, str]]]] = {}
    after = _last_known_commits(history)
    for prompt in open_prompts:
        known = history_of.get(prompt, AgentRunHistory())
        known_numbers = set(known.started) | {r.identity.number for r in known.records}
        for repo in binding.plans[prompt].repos:
            if repo.path not in in_repo:
                in_repo[repo.path] = _commits_naming(Path(repo.path), prefix, after.get(repo.name))
            for sha, at, trailers in in_repo[repo.path]:
                digits = trailers["AWP-Attempt"].rpartition(".a")[2]
                if (trailers.get("AWP-Packet") != binding.packet.name or trailers.get("AWP-Prompt") != prompt
                        or not digits.isdigit() or int(digits) in known_numbers
                        or trailers.get("AWP-Dagster-Run") in driven):
                    continue
                found.setdefault((prompt, int(digits)), (trailers, {}))[1].setdefault(repo.name, (sha, _iso(at)))
    lost = []
    for (prompt, number), (trailers, evidence) in sorted(found.items()):
        named = trailers.get("AWP-Dagster-Run", "")
        run_id = named if named in runs else runs[0]
        account = trailers.get("AWP-Account")
        target = Target(trailers.get("AWP-Provider", ""), trailers.get("AWP-Model"),
                        None if account in (None, "none") else account, None)
        mode = trailers.get("AWP-Mode", "run")
        record = _adopted(binding, history, prompt, (trailers["AWP-Attempt"], trailers.get(
            "AWP-Agent-Run", history.agent_run_of(prompt, number)), number), mode, run_id, target, LOST_REASON,
            evidence)
        agent_run = history_of.setdefault(prompt, AgentRunHistory())
        agent_run.records.append(record)
        agent_run.records.sort(key=lambda r: r.identity.number)
        agent_run.started[number] = (run_id, mode, target)
        lost.append((prompt, run_id, record))
    return lost


def _last_known_commits(history: PacketRunHistory) -> dict[str, str]:
    """Repo → the commit of the packet run's last recorded Attempt there. One work tree runs one Attempt at a
    time and commits are lost as a suffix, so a commit the ledger lost comes after it: git walks back to it, not
    through the repo's whole history."""
    last: dict[str, tuple[str, str]] = {}
    for record in (r for agent_run in history.agent_runs.values() for r in agent_run.records):
        for commit in record.commits:
            if commit.status == "committed" and commit.sha and record.ended_at >= last.get(commit.repo, ("", ""))[0]:
                last[commit.repo] = (record.ended_at, commit.sha)
    return {repo: sha for repo, (_, sha) in last.items()}


def _commits_naming(path: Path, prefix: str, after: str | None) -> list[tuple[str, str, dict[str, str]]]:
    if not (path / ".git").exists():
        return []
    for since in dict.fromkeys((after, None)):  # a commit no longer there (a rewritten branch): the whole history
        try:
            return commits_naming(path, prefix, since)
        except WorkspaceError:
            continue
    return []


def _adopted(binding: PacketBinding, history: PacketRunHistory, prompt: str, ids: tuple[str, str, int], mode: str,
             run_id: str, target: Target, reason: str, evidence: dict[str, tuple[str, str]]) -> AttemptRecord:
    """The completed record of an Attempt adopted from its commits (`evidence`: repo → (sha, commit time));
    `ids`: its Attempt id, AgentRun id and number."""
    ident, agent_run, number = ids
    plan = binding.plans[prompt]
    spec = binding.catalog.providers.get(target.provider) if binding.catalog else None
    when = min(at for _, at in evidence.values())
    return AttemptRecord(
        identity=AttemptIdentity(attempt_id=ident, agent_run=agent_run, number=number, packet=binding.packet.name,
                                 packet_run=history.packet_run, prompt=prompt, mode=mode, dagster_run=run_id),
        target=AttemptTarget(provider=target.provider, provider_kind=spec.kind if spec else "unknown",
                             account=target.account, model=target.model or "", effort=target.effort, reason=reason),
        role=plan.agent, prompt_name=binding.packet.prompt(prompt).name,
        workspace={r.name: r.path for r in plan.repos}, cwd=plan.cwd, checkpoint={}, started_at=when,
        ended_at=when, duration_s=0.0, result="completed",
        commits=[CommitResult(repo=repo, status="committed", sha=sha) for repo, (sha, _) in evidence.items()],
        adopted=True, evidence={repo: f"{sha} (AWP-Attempt: {ident})" for repo, (sha, _) in evidence.items()})


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


def settle_earlier_packet_runs(ledger: Ledger, binding: PacketBinding, new_packet_run: str) -> list[str]:
    """Adopt the committed Attempts of every earlier packet run of the packet and stop each one left unfinished
    (it says why: `new_packet_run` started). The packet runs stopped here."""
    earlier = [p for p in ledger.packet_runs(binding.packet.name) if p != new_packet_run]
    counts = ledger.run_counts(earlier)
    seen = ledger.settled(list(counts))
    stopped = []
    for packet_run, runs in counts.items():
        if seen.get(packet_run) == runs:
            continue
        history = ledger.history(packet_run, binding.keys)
        ledger.adopt(binding, history)
        state, _ = packet_run_state(agent_run_truth(binding, history)[1])
        if state in _UNFINISHED and history.stopped is None:
            ledger.stop(packet_run, StopMarker(time.time(), "new_packet_run",
                                               f"packet run {new_packet_run} of the packet started after it"))
            stopped.append(packet_run)
        ledger.mark_settled(packet_run, runs)  # last: a crash before it settles the packet run again
    return stopped
