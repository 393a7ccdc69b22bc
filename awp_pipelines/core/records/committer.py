"""Prompt Runner's committer: after the contract passes, one commit per changed target repo. Never pushes.

A failure raises `CommitError`; the caller records the prompt as failed (`commit_failed`), never completed
(Prompt Runner 0.10 fixed a commit failure being marked complete).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from awp_pipelines.core.records.redact import Redactor
from awp_pipelines.core.records.secret_scan import SecretInWork
from awp_pipelines.core.records.workspace import (
    WorkspaceError,
    changed_paths,
    git,
    head,
    identity_overrides,
    secrets_between,
    worktree_tree,
)

CommitStatus = Literal["committed", "no_changes"]
_TRAILER_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*$")


class CommitResult(BaseModel):
    """What committing one target repo came to; an Attempt's record keeps one per target repo."""

    model_config = ConfigDict(frozen=True)

    repo: str
    status: CommitStatus
    sha: str | None = Field(None, description="The new commit; None when there was nothing to commit.")


class CommitError(Exception):
    """Committing in `repo` failed. `results` holds the repos committed before it (their commits stay)."""

    def __init__(self, repo: str, message: str, results: Mapping[str, CommitResult] | None = None,
                 failure_class: Literal["commit_failed", "secret_in_work"] = "commit_failed") -> None:
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


def _commit_one(name: str, repo: Path, text: str, secrets: tuple[str, ...]) -> CommitResult:
    if not changed_paths(repo):
        return CommitResult(repo=name, status="no_changes")
    if secrets:  # push protection, before anything is staged: the tree as it would be committed, in AWP's index
        base = head(repo)
        hits = secrets_between(repo, base, worktree_tree(repo, base), secrets)
        if hits:
            raise SecretInWork(name, hits)
    git(repo, "add", "-A")
    # Dirty only in ways `git add` does not stage (e.g. inside a submodule): nothing to commit.
    if git(repo, "diff", "--cached", "--quiet", ok_codes=(0, 1)).returncode == 0:
        return CommitResult(repo=name, status="no_changes")
    # --cleanup=whitespace keeps lines starting with '#' (Markdown headings); the default would drop them.
    git(repo, *identity_overrides(repo), "commit", "--quiet", "--cleanup=whitespace", "--file", "-",
        input=text)
    sha = head(repo)
    if sha is None:  # pragma: no cover - git said it committed
        raise WorkspaceError(repo, ["rev-parse", "HEAD"], "no HEAD after commit")
    return CommitResult(repo=name, status="committed", sha=sha)


def commit_targets(repos: Mapping[str, Path], message: str, trailers: Mapping[str, str],
                   redactor: Redactor | None = None) -> dict[str, CommitResult]:
    """Commit each target repo's changes (`git add -A`); a clean repo is `no_changes`. Never pushes. A change
    holding one of the redactor's literal secrets is refused (`secret_in_work`, the file and line named)."""
    redact = redactor or Redactor()
    text = with_trailers(message, trailers, redact)
    results: dict[str, CommitResult] = {}
    for name, repo in repos.items():
        try:
            results[name] = _commit_one(name, Path(repo), text, redact.literals)
        except SecretInWork as err:
            raise CommitError(name, redact(str(err)), dict(results), "secret_in_work") from err
        except WorkspaceError as err:
            raise CommitError(name, redact(str(err)), dict(results)) from err
    return results
