"""The partial work of Attempts that died (no record), saved as their AgentRun's checkpoint before anything else
edits the tree: the next `awp run`, or the next Attempt's compute, does it. Outside the ledger on purpose: it acts
on git work trees from a history the ledger already read, and stores nothing in it."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.core.records.redact import Redactor, secret_named_values
from awp_pipelines.core.records.secret_scan import SecretInWork
from awp_pipelines.core.records.workspace import WorkspaceError, discard_changes, head, save_checkpoint
from awp_pipelines.orchestration.compile.binding import PacketBinding
from awp_pipelines.orchestration.ledger.history import PacketRunHistory


def checkpoint_interrupted(repos: Mapping[str, Path], agent_run: str, attempt: str,
                           secrets: Sequence[str] = ()) -> dict[str, str]:
    """Save a dead Attempt's partial work as its AgentRun's checkpoint and clean the tree, so no other
    prompt commits it; the AgentRun's next Attempt starts from it. Work holding one of `secrets` is neither
    saved nor cleaned: the next Attempt finds the tree dirty and names the files, for a person."""
    saved = {}
    for name, repo in repos.items():
        try:
            sha = save_checkpoint(repo, head(repo), f"refs/awp/checkpoints/{agent_run}/{attempt}",
                                  f"AWP checkpoint {attempt} (interrupted)", secrets)
            if sha:
                saved[name] = sha
                discard_changes(repo)
        except (WorkspaceError, SecretInWork):
            continue
    return saved


def save_unrecorded_work(binding: PacketBinding, history: PacketRunHistory, packet_run: str,
                         prompts: Collection[str], run_ids: Collection[str] | None = None) -> list[str]:
    """Checkpoint the partial work of the `prompts`' Attempts that started and have no record (only those of
    `run_ids`, when given): their process died. The Attempt ids whose work was saved."""
    saved = []
    secrets = Redactor.for_catalog(binding.catalog).with_values(secret_named_values()).literals
    for prompt in prompts:
        agent_run = history.agent_runs.get(prompt)
        if agent_run is None:
            continue
        recorded = {r.identity.number for r in agent_run.records}
        for number, (run_id, _, _) in agent_run.started.items():
            if number in recorded or (run_ids is not None and run_id not in run_ids):
                continue
            ident = history.agent_run_of(prompt, number)
            attempt = tags.attempt_id(ident, number)
            if checkpoint_interrupted({t.name: Path(t.path) for t in binding.plans[prompt].repos}, ident, attempt,
                                      secrets):
                saved.append(attempt)
    return saved
