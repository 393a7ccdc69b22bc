"""Prompt Runner's committer: after the contract passes, one commit per changed target repo. Never pushes.

A failure raises `CommitError`; the caller records the prompt as failed (`commit_failed`), never completed
(Prompt Runner 0.10 fixed a commit failure being marked complete).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

import pygit2
from pydantic import BaseModel, ConfigDict, Field

from awp_pipelines.core.records.commit_seal import SEAL_TRAILER, seal, seal_key
from awp_pipelines.core.records.redact import Redactor
from awp_pipelines.core.records.secret_scan import SecretInWork
from awp_pipelines.core.records.workspace import WorkspaceError, head, identity, index_unlocked, store_tree

CommitStatus = Literal["committed", "no_changes"]
_TRAILER_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*$")


class CommitResult(BaseModel):
    """What committing one target repo came to; an Attempt's record keeps one per target repo."""

    model_config = ConfigDict(frozen=True)

    repo: str
    status: CommitStatus
    sha: str | None = Field(None, description="The new commit; None when there was nothing to commit.")
    skipped: list[str] = Field(default_factory=list, description="What of the work tree was not stored, and why "
                               "(a FIFO, a nested repository's .git).")


class CommitError(Exception):
    """Committing in `repo` failed. `results` holds the repos committed before it (their commits stay)."""

    def __init__(self, repo: str, message: str, results: Mapping[str, CommitResult] | None = None,
                 failure_class: Literal["commit_failed", "secret_in_work", "tree_tampered"] = "commit_failed") -> None:
        self.repo = repo
        self.message = message
        self.results = dict(results or {})
        self.failure_class = failure_class
        super().__init__(f"commit failed in {repo}: {message}")


def _single_line(value: str) -> str:
    return " ".join(str(value).split())


def with_trailers(message: str, trailers: Mapping[str, str], redactor: Redactor | None = None) -> str:
    """The message, a blank line, then one `Key: value` trailer per line (single-line, redacted).

    Pass the run's `Redactor` (Redactor.for_catalog): a git object is forever, so an account's literal
    credential must never reach one; without it only the secret patterns are removed.
    """
    redact = redactor or Redactor()
    body = redact(message).strip()
    if not body:
        raise ValueError("empty commit message")
    lines = []
    for key, value in trailers.items():
        if not _TRAILER_KEY.match(key):
            raise ValueError(f"invalid trailer key {key!r}: letters, digits and '-' only")
        text = _single_line(redact(str(value))) if value is not None else ""
        if text:
            lines.append(f"{key}: {text}")
    return body + "\n" + ("\n" + "\n".join(lines) + "\n" if lines else "")


class BranchMoved(WorkspaceError):
    """The branch no longer points at the commit AWP recorded before the session: someone moved it."""


def _sealed(text: str, attempt: str, tree: str, parents: list[str]) -> str:
    """The message with AWP's seal as its last trailer (commit_seal.py); without an Attempt, as it is."""
    key = seal_key() if attempt else None
    if key is None:  # no Attempt, or no key could be made: unsealed, so never adopted
        return text
    line = f"{SEAL_TRAILER}: {seal(key, attempt, tree, parents)}\n"
    return text + line if "\n\n" in text.rstrip("\n") else text + "\n" + line


def _commit_one(name: str, repo: Path, text: str, secrets: tuple[str, ...], base: str | None,
                attempt: str) -> CommitResult:
    """The commit, built from objects: parent `base` (HEAD as AWP recorded it before the session), tree `base`'s
    plus the work tree's changes as AWP read them; the branch moved from `base` by compare-and-set. The index,
    MERGE_HEAD, the sequencer and replace refs decide nothing; the index is then set to the commit's tree."""
    repository, found, tree = store_tree(repo, base, secrets, name, text)
    if tree is None:
        return CommitResult(repo=name, status="no_changes", skipped=found.skipped)
    index_unlocked(repository, repo, "commit")  # before the branch moves: the index must be able to follow
    parents = [base] if base else []
    who = identity(repository)
    try:
        sha = repository.create_commit(None, who, who, _sealed(text, attempt, tree, parents),
                                       pygit2.Oid(hex=tree), [pygit2.Oid(hex=p) for p in parents])
        _move_branch(repository, repo, base, sha)
        index = repository.index
        index.read_tree(repository[tree])
        index.write()
    except pygit2.GitError as err:
        raise WorkspaceError(repo, ["commit"], str(err)) from None
    return CommitResult(repo=name, status="committed", sha=str(sha), skipped=found.skipped)


def _move_branch(repository: pygit2.Repository, repo: Path, base: str | None, sha: pygit2.Oid) -> None:
    """HEAD's branch from `base` to `sha`, only if it still points at `base` (libgit2's compare-and-set)."""
    message = "AWP commit"
    head_ref = repository.references["HEAD"]
    if head_ref.type == pygit2.enums.ReferenceType.DIRECT:  # detached
        if str(head_ref.target) != base:
            raise BranchMoved(repo, ["commit"], f"HEAD is at {head_ref.target}, not {base} as before the session")
        repository.set_head(sha)
        return
    branch = str(head_ref.target)
    try:
        current = repository.references[branch]
    except KeyError:
        current = None
    if base is None:
        if current is not None:
            raise BranchMoved(repo, ["commit"], f"{branch} was made during the session")
        repository.references.create(branch, sha, force=False)
        return
    if current is None or str(current.target) != base:
        raise BranchMoved(repo, ["commit"], f"{branch} is at {current.target if current else 'nothing'}, not at "
                          f"{base} as before the session")
    try:
        current.set_target(sha, message)
    except (pygit2.GitError, ValueError) as err:
        raise BranchMoved(repo, ["commit"], f"{branch} moved while AWP committed: {err}") from None


def commit_targets(repos: Mapping[str, Path], message: str, trailers: Mapping[str, str],
                   redactor: Redactor | None = None, bases: Mapping[str, str | None] | None = None
                   ) -> dict[str, CommitResult]:
    """Commit each target repo's changes (as `git add -A` would: ignored files not); a clean repo is
    `no_changes`. Never pushes. `bases`: each repo's HEAD as recorded before the session (default: HEAD now).
    A change holding one of the redactor's literal secrets is refused (`secret_in_work`, the file and line
    named); a branch moved from its base is `tree_tampered`."""
    redact = redactor or Redactor()
    text = with_trailers(message, trailers, redact)
    attempt = str(trailers.get("AWP-Attempt") or "")
    results: dict[str, CommitResult] = {}
    for name, repo in repos.items():
        try:
            base = bases[name] if bases is not None and name in bases else head(repo)
            results[name] = _commit_one(name, Path(repo), text, redact.literals, base, attempt)
        except SecretInWork as err:
            raise CommitError(name, redact(str(err)), dict(results), "secret_in_work") from err
        except BranchMoved as err:
            raise CommitError(name, redact(str(err)), dict(results), "tree_tampered") from err
        except WorkspaceError as err:
            raise CommitError(name, redact(str(err)), dict(results)) from err
    return results
