"""An Attempt's diff, stored beside its events (`<attempt>.diff.json`) so its page shows what changed after the
work tree moved on: the commit's diff for a completed Attempt, the checkpoint's for one that did not complete.

Bounded: each file's patch is cut at FILE_MAX_LINES lines or FILE_MAX_CHARS characters, the whole at
TOTAL_MAX_CHARS characters and FILES_MAX files; what was cut is said on the file (`cut`) or the diff
(`left_out`). Redacted like every other artifact before it reaches the disk.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Literal

import pygit2
from pydantic import BaseModel, ConfigDict

from awp_pipelines.core.records.plural import counted
from awp_pipelines.core.records.work_tree_scan import scan
from awp_pipelines.core.records.workspace import STAT_CAP_BYTES, WorkspaceError, open_repo, read_work_file, scan_paths

FILE_MAX_LINES = 2_000
FILE_MAX_CHARS = 200_000
TOTAL_MAX_CHARS = 1_000_000
FILES_MAX = 200
DiffSource = Literal["commit", "checkpoint", "work_tree"]
WORK_TREE = "work tree"  # `to` of a diff that reaches the work tree as it is (nothing stored in git for it)


class FileDiff(BaseModel):
    """One file's unified diff (the `@@` hunks and their lines; git's header lines left out)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    repo: str
    path: str
    status: Literal["A", "M", "D", "B"]  # B: binary (git shows no lines)
    added: int = 0
    removed: int = 0
    patch: str = ""
    cut: str | None = None  # what of the patch is not stored, and why


class RepoDiff(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    repo: str
    base: str | None  # the Attempt's checkpoint (HEAD before it); None: the repo had no commit
    to: str  # the commit, checkpoint commit or tree the diff reaches
    source: DiffSource


class AttemptDiff(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    attempt: str
    repos: list[RepoDiff]
    files: list[FileDiff]
    left_out: int = 0  # files past FILES_MAX or TOTAL_MAX_CHARS: not stored at all


def diff_path(events_file: Path | str) -> Path:
    """Where an Attempt's diff goes: beside its events JSONL."""
    return Path(events_file).with_suffix(".diff.json")


def _split_files(text: str) -> list[tuple[str, str, str]]:
    """(path, status, hunks) per file of `git diff` output."""
    files: list[tuple[str, str, str]] = []
    for chunk in text.split("\ndiff --git ") if text else []:
        lines = chunk.removeprefix("diff --git ").split("\n")
        header, hunks = [], []
        for index, line in enumerate(lines):
            if line.startswith("@@"):
                hunks = lines[index:]
                break
            header.append(line)
        status = "M"
        path = header[0].split(" b/", 1)[-1] if header else ""
        for line in header:
            if line.startswith("new file mode"):
                status = "A"
            elif line.startswith("deleted file mode"):
                status = "D"
            elif line.startswith("Binary files"):
                status = "B"
            elif line.startswith("+++ b/") or line.startswith("--- a/") and status == "D":
                path = line[6:]
        files.append((path, status, "\n".join(hunks).rstrip("\n")))
    return files


def _capped(patch: str) -> tuple[str, str | None]:
    lines = patch.split("\n")
    kept = lines[:FILE_MAX_LINES]
    text = "\n".join(kept)
    if len(text) > FILE_MAX_CHARS:
        text = text[: text.rfind("\n", 0, FILE_MAX_CHARS)]
    shown = text.count("\n") + 1 if text else 0
    if shown >= len(lines):
        return text, None
    return text, (f"{len(lines) - shown} of {counted(len(lines), 'line')} not stored "
                  f"(a file keeps {FILE_MAX_LINES} lines, "
                  f"{FILE_MAX_CHARS // 1000} KB)")


def repo_files(repo_name: str, repo: Path, base: str | None, to: str, redact: Callable[[str], str]) -> list[FileDiff]:
    """The redacted, per-file capped diff of `repo` from `base` to `to` (a commit or tree; WORK_TREE: the work
    tree as it is, read by AWP and diffed in memory: nothing is written to the object store)."""
    files = []
    for path, status, hunks in _split_files(_diff_text(repo, base, to)):
        body = [line for line in hunks.split("\n") if not line.startswith("@@")]
        patch, cut = _capped(redact(hunks))
        files.append(FileDiff(repo=repo_name, path=redact(path), status=status,  # type: ignore[arg-type]
                              added=sum(1 for line in body if line.startswith("+")),
                              removed=sum(1 for line in body if line.startswith("-")), patch=patch, cut=cut))
    return files


def _diff_text(repo: Path, base: str | None, to: str) -> str:
    """git's unified diff, from libgit2: no textconv, no external diff driver, no program."""
    repository = open_repo(repo)
    try:
        old = repository.revparse_single(base).peel(pygit2.Tree) if base else None
        if to != WORK_TREE:
            new = repository.revparse_single(to).peel(pygit2.Tree)
            diff = old.diff_to_tree(new) if old is not None else new.diff_to_tree(swap=True)
            return diff.patch or ""
    except (KeyError, ValueError, pygit2.GitError) as err:
        raise WorkspaceError(repo, ["diff"], str(err)) from None
    parts = []
    found = scan(repository, repo, old)
    for path in scan_paths(repository, found):
        entry = found.changes.get(path)
        before = _blob_data(repository, old, path)
        after = None if entry is None else read_work_file(Path(repo) / path, STAT_CAP_BYTES)
        parts.append(pygit2.Patch.create_from(before, after, old_as_path=path, new_as_path=path).text or "")
    return "".join(parts)


def _blob_data(repository: pygit2.Repository, tree: pygit2.Tree | None, path: str) -> bytes | None:
    try:
        return repository[tree[path].id].data if tree is not None else None  # type: ignore[attr-defined]
    except KeyError:
        return None


def attempt_diff(attempt: str, repos: Mapping[str, tuple[Path, str | None, str, DiffSource]],
                 redact: Callable[[str], str]) -> AttemptDiff:
    """`repos`: name → (path, base, to, source). Files past the total cap keep their counts, not their lines."""
    files: list[FileDiff] = []
    for name, (path, base, to, _) in repos.items():
        files += repo_files(name, path, base, to, redact)
    kept, total = [], 0
    for file in files[:FILES_MAX]:
        total += len(file.patch)
        if total > TOTAL_MAX_CHARS:
            file = file.model_copy(update={"patch": "", "cut": f"not stored: the Attempt's diff keeps "
                                           f"{TOTAL_MAX_CHARS // 1000} KB in all"})
        kept.append(file)
    return AttemptDiff(attempt=attempt, files=kept, left_out=max(0, len(files) - FILES_MAX),
                       repos=[RepoDiff(repo=n, base=b, to=t, source=s) for n, (_, b, t, s) in repos.items()])


def write_diff(path: Path, diff: AttemptDiff) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(diff.model_dump_json())
    tmp.replace(path)


def read_diff(path: Path | str) -> AttemptDiff | None:
    """The stored diff, or None when there is none (an Attempt from before diffs were stored, a lost file)."""
    try:
        return AttemptDiff.model_validate(json.loads(Path(path).read_text()))
    except (OSError, ValueError):
        return None
