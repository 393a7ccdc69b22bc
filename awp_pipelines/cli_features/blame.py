"""From a line of a committed artifact to the Attempt that wrote it: blame, then the commit's trailers.

Through libgit2 (no git process: nothing of the repository's config or attributes runs), no Dagster. A line
the work tree changed since HEAD is "not committed yet"; the others are blamed on HEAD's history. A commit's
AWP trailers count only where its seal holds (commit_seal.py): a commit anyone else wrote with `AWP-Attempt:`
in its message is shown as forged, never as the Attempt's.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pygit2

from awp_pipelines.core.records.commit_seal import seal_key
from awp_pipelines.core.records.redact import REDACTED, Redactor, secret_named_values
from awp_pipelines.core.records.workspace import WorkspaceError, open_repo, seal_holds, trailers_of

DAGSTER_URL_ENV = "AWP_DAGSTER_URL"
# Trailer → field of `Provenance`. AWP-Attempt is what makes a commit "written by AWP".
TRAILER_FIELDS: dict[str, str] = {
    "AWP-Packet": "packet",
    "AWP-Prompt": "prompt",
    "AWP-Agent-Run": "agent_run",
    "AWP-Attempt": "attempt",
    "AWP-Mode": "mode",
    "AWP-Reason": "reason",
    "AWP-Provider": "provider",
    "AWP-Account": "account",
    "AWP-Model": "model",
    "AWP-Dagster-Run": "dagster_run",
}
_UNCOMMITTED = "0" * 40


class BlameError(Exception):
    """The question cannot be asked: no such file, not in a git repo, line out of range."""


@dataclass(frozen=True)
class Provenance:
    """What the AWP trailers of one commit say; every field None when the commit has no such trailer."""

    packet: str | None = None
    prompt: str | None = None
    agent_run: str | None = None
    attempt: str | None = None
    mode: str | None = None
    reason: str | None = None
    provider: str | None = None
    account: str | None = None
    model: str | None = None
    dagster_run: str | None = None
    dagster_run_url: str | None = None
    forged: bool = False  # AWP trailers without AWP's seal: the commit is not AWP's, whatever it says

    @property
    def by_awp(self) -> bool:
        return self.attempt is not None


@dataclass(frozen=True)
class BlameCommit:
    """A commit as `git blame` names it (any author); an Attempt's own commits are `committer.CommitResult`."""

    sha: str
    author: str
    author_time: int
    summary: str


@dataclass(frozen=True)
class BlamedLines:
    """Lines `start..end` (1-based, inclusive) of `file` as last changed by `commit`."""

    file: str
    repo: str
    start: int
    end: int
    text: list[str]
    commit: BlameCommit | None  # None: not committed yet
    awp: Provenance = field(default_factory=Provenance)

    @property
    def by_awp(self) -> bool:
        return self.awp.by_awp

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["by_awp"] = self.by_awp
        return data


def parse_target(spec: str) -> tuple[Path, int | None]:
    """`FILE` or `FILE:LINE`. A path that itself ends in `:digits` and exists wins over the line reading."""
    head, sep, tail = spec.rpartition(":")
    if sep and tail.isdigit() and head and not Path(spec).exists():
        line = int(tail)
        if line < 1:
            raise BlameError(f"{spec}: line numbers start at 1")
        return Path(head), line
    return Path(spec), None


def dagster_run_url(run_id: str | None, base_url: str | None = None) -> str | None:
    """The run's page on the webserver at `base_url` (default: $AWP_DAGSTER_URL); None when either is unset."""
    base = (base_url if base_url is not None else os.environ.get(DAGSTER_URL_ENV, "")).strip().rstrip("/")
    if not run_id or not base:
        return None
    if base.endswith("/runs"):  # tolerate a URL that already names the runs page
        base = base[: -len("/runs")]
    return f"{base}/runs/{run_id}"


def parse_trailers(text: str) -> dict[str, str]:
    """`Key: value` lines (git's `%(trailers:only,unfold)` output) → the AWP ones; the last value wins."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() in TRAILER_FIELDS:
            found[key.strip()] = value.strip()
    return found


def provenance(trailers: Mapping[str, str], base_url: str | None = None) -> Provenance:
    values: dict[str, str | None] = {TRAILER_FIELDS[k]: v for k, v in trailers.items() if k in TRAILER_FIELDS and v}
    if values.get("account") == "none":  # _commit writes "none" for a provider without accounts
        values["account"] = None
    return Provenance(**values, dagster_run_url=dagster_run_url(values.get("dagster_run"), base_url))  # type: ignore[arg-type]


def blame(file: Path | str, line: int | None = None, base_url: str | None = None) -> list[BlamedLines]:
    """Who last changed `line` of `file` (or every line when None), with each commit's AWP provenance.

    Consecutive lines from one commit form one entry. Raises BlameError for a question git cannot answer.
    """
    path = Path(file)
    if not path.is_file():
        raise BlameError(f"{file}: no such file")
    top = _top(path.resolve().parent)
    if top is None:
        raise BlameError(f"{file}: not inside a git repository")
    try:
        repository = open_repo(top)
    except WorkspaceError as err:
        raise BlameError(f"{file}: {err.detail}") from None
    rel = os.path.relpath(path.resolve(), top)
    lines = _lines(repository, rel, path.read_bytes(), line)
    if line is not None:
        if line > len(lines):
            raise BlameError(f"{file}:{line}: the file has only {len(lines)} lines")
        lines = [lines[line - 1]]
    hunks = redacted_lines(lines, Redactor(secret_named_values()))
    shas = sorted({sha for sha, _, _ in hunks if sha != _UNCOMMITTED})
    commits = _commits(repository, shas, base_url)
    return _group(rel, str(top), hunks, commits)


def _top(folder: Path) -> Path | None:
    """The work tree holding `folder`: the nearest folder up with a `.git` of its own."""
    for place in (folder, *folder.parents):
        if os.path.lexists(place / ".git"):
            return place
    return None


def _lines(repository: pygit2.Repository, rel: str, data: bytes, only: int | None = None
           ) -> list[tuple[str, int, str]]:
    """(sha, line number, text) per line of the file as it is: a line HEAD's version has too is blamed on
    HEAD's history, any other is uncommitted. `only`: the one line asked about (the others get no sha)."""
    work = data.decode("utf-8", "replace").splitlines()
    try:
        committed = repository.head.peel(pygit2.Tree)[rel]
        old = repository[committed.id].data.decode("utf-8", "replace").splitlines()  # type: ignore[attr-defined]
    except (KeyError, ValueError, pygit2.GitError):
        return [(_UNCOMMITTED, n, text) for n, text in enumerate(work, 1)]
    at_head: dict[int, int] = {}
    for block in difflib.SequenceMatcher(None, old, work, autojunk=False).get_matching_blocks():
        at_head.update({block.b + i: block.a + i for i in range(block.size)})
    asked = [i for i in range(len(work)) if i in at_head and (only is None or i == only - 1)]
    if not asked:
        return [(_UNCOMMITTED, i + 1, text) for i, text in enumerate(work)]
    low, high = at_head[asked[0]] + 1, at_head[asked[-1]] + 1
    blamed = repository.blame(rel, min_line=low, max_line=high)
    return [(str(blamed.for_line(at_head[i] + 1).final_commit_id) if i in asked else _UNCOMMITTED, i + 1, text)
            for i, text in enumerate(work)]


def redacted_lines(hunks: list[tuple[str, int, str]], redactor: Redactor) -> list[tuple[str, int, str]]:
    """Each line as `awp blame` may print it: git holds what was committed before push protection (or by a
    person), so every secret pattern and the runner's secret-named values are redacted, and a private key's
    block whole, from its BEGIN line to its END line."""
    out, in_key = [], False
    for sha, number, text in hunks:
        begins = "PRIVATE KEY" in text and "-----BEGIN" in text
        if begins or in_key:
            in_key = not ("PRIVATE KEY" in text and "-----END" in text)
            out.append((sha, number, REDACTED))
        else:
            out.append((sha, number, redactor(text)))
    return out


def _commits(repository: pygit2.Repository, shas: Sequence[str], base_url: str | None
             ) -> dict[str, tuple[BlameCommit, Provenance]]:
    """Author, time, subject and the AWP trailers of each commit, read from the object store."""
    key = seal_key(create=False)
    found: dict[str, tuple[BlameCommit, Provenance]] = {}
    for sha in shas:
        commit = repository[sha].peel(pygit2.Commit)
        summary = commit.message.split("\n", 1)[0]
        info = BlameCommit(sha=sha, author=commit.author.name, author_time=commit.author.time,
                           summary=Redactor()(summary))
        claimed = provenance(parse_trailers("\n".join(f"{k}: {v}" for k, v in trailers_of(commit).items())),
                             base_url)
        if claimed.by_awp and not seal_holds(commit, key):
            claimed = Provenance(forged=True)
        found[sha] = (info, claimed)
    return found


def _group(rel: str, repo: str, hunks: Iterable[tuple[str, int, str]],
           commits: Mapping[str, tuple[BlameCommit, Provenance]]) -> list[BlamedLines]:
    groups: list[BlamedLines] = []
    for sha, number, text in hunks:
        last = groups[-1] if groups else None
        if last is not None and last.end == number - 1 and (last.commit.sha if last.commit else _UNCOMMITTED) == sha:
            groups[-1] = BlamedLines(last.file, last.repo, last.start, number, [*last.text, text], last.commit,
                                     last.awp)
            continue
        info, prov = commits.get(sha, (None, Provenance()))
        groups.append(BlamedLines(rel, repo, number, number, [text], info, prov))
    return groups


def by_attempt(entries: Iterable[BlamedLines]) -> list[tuple[Provenance, list[BlamedLines]]]:
    """AWP entries grouped by Attempt, in order of first appearance (for a whole-file answer)."""
    order: dict[str, tuple[Provenance, list[BlamedLines]]] = {}
    for entry in entries:
        if entry.by_awp:
            order.setdefault(entry.awp.attempt or "", (entry.awp, []))[1].append(entry)
    return list(order.values())
