"""The static items of a contract: one per clause entry (one per clause for whole-repo clauses).

Each item becomes one Dagster asset check, so its `check_name` is stable, unique within the contract and a
valid check name (`^[A-Za-z0-9_]+$`, at most 63 characters).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .contract import CommandCheck, ContainsCheck, DocCheck, MatchesCheck, VerifyContract
from .paths import display, written_repo_path

# The order items are listed and run in (Prompt Runner's verification order).
CLAUSES: tuple[str, ...] = (
    "files_exist",
    "files_absent",
    "contains",
    "matches",
    "doc",
    "yaml",
    "json",
    "glob",
    "source_absent",
    "commands",
    "changed_paths_only",
    "repos_clean",
)
# Clauses that judge a whole repository state, so they are one item however many entries they list.
WHOLE_CLAUSES = frozenset({"changed_paths_only", "repos_clean"})
MAX_CHECK_NAME = 63

_LABEL_PREFIX = {
    "files_exist": "file exists",
    "files_absent": "file absent",
    "contains": "contains",
    "matches": "matches",
    "yaml": "YAML parses",
    "json": "JSON contract",
    "glob": "glob contract",
    "source_absent": "forbidden source absent",
    "changed_paths_only": "changed path allowed",
}


class ContractItem(BaseModel):
    """One verifiable item of a contract, known before anything runs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: str = Field(description="The clause the item comes from.")
    check_name: str = Field(description="Unique within the contract; a valid Dagster asset check name.")
    label: str = Field(description="Human-readable one-line description.")
    repo: str | None = Field(default=None, description="Repository as written; None means the default.")
    path: str | None = Field(default=None, description="Path as written; None for commands and whole clauses.")


def clause_entries(contract: VerifyContract, clause: str) -> list[Any]:
    return list(getattr(contract, "json_" if clause == "json" else clause))


def entry_label(clause: str, entry: Any) -> str:
    """Prompt Runner's checklist label for one entry of a clause."""
    if clause == "doc":
        min_lines = entry.min_lines if isinstance(entry, DocCheck) else 1
        return f"doc: {display(entry)} (non-blank; {min_lines} lines advisory)"
    if clause == "commands":
        return f"command: {command_text(entry, with_repo=True)}"
    if clause == "repos_clean":
        what = "repo committed and pushed" if entry.pushed else "repo committed"
        return f"{what}: {entry.repo or '(default)'}"
    return f"{_LABEL_PREFIX[clause]}: {display(entry)}"


def _what(entry: Any) -> str:
    """What a contains/matches item looks for: two items on one file must read differently in the UI."""
    if isinstance(entry, ContainsCheck):
        return f" ({entry.text!r})"
    if isinstance(entry, MatchesCheck):
        return f" (/{entry.pattern}/)"
    return ""


def command_text(command: CommandCheck, *, with_repo: bool = False) -> str:
    argv = shlex.join([command.exec, *command.args])
    return f"{command.repo}: {argv}" if with_repo and command.repo else argv


def planned_items(contract: VerifyContract) -> list[tuple[ContractItem, Any]]:
    """Each item with what it checks: one entry, or the clause's entry list for whole clauses."""
    planned: list[tuple[ContractItem, Any]] = []
    for clause in CLAUSES:
        entries = clause_entries(contract, clause)
        if not entries:
            continue
        if clause in WHOLE_CLAUSES:
            planned.append((_whole_item(clause, entries), entries))
            continue
        for index, entry in enumerate(entries, start=1):
            planned.append((_entry_item(clause, index, entry), entry))
    return planned


def contract_items(contract: VerifyContract) -> list[ContractItem]:
    """The contract's items in a stable order: clause order above, then entry order."""
    return [item for item, _ in planned_items(contract)]


def _entry_item(clause: str, index: int, entry: Any) -> ContractItem:
    if isinstance(entry, CommandCheck):
        repo, path, words = entry.repo, None, command_text(entry, with_repo=True)
    else:
        repo, path = written_repo_path(entry)
        words = display(entry)
    return ContractItem(
        kind=clause,
        check_name=check_name(f"{clause}_{index}", words),
        label=entry_label(clause, entry) + _what(entry),
        repo=repo,
        path=path,
    )


def _whole_item(clause: str, entries: Sequence[Any]) -> ContractItem:
    if clause == "repos_clean":
        repos = {entry.repo for entry in entries}
        label = "; ".join(entry_label(clause, entry) for entry in entries)
    else:
        repos = {written_repo_path(entry)[0] for entry in entries}
        label = "only these paths changed: " + ", ".join(display(entry) for entry in entries)
    repo = repos.pop() if len(repos) == 1 else None
    return ContractItem(kind=clause, check_name=clause, label=label, repo=repo, path=None)


def check_name(prefix: str, words: str) -> str:
    """`prefix` (clause and index: unique by construction) plus a readable slug, cut to the length limit."""
    slug = re.sub(r"[^a-z0-9]+", "_", words.lower()).strip("_")
    room = MAX_CHECK_NAME - len(prefix) - 1
    slug = slug[:room].rstrip("_") if room > 0 else ""
    return f"{prefix}_{slug}" if slug else prefix
