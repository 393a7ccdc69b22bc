"""The static items of a contract: one per clause entry (one per clause for whole-repo clauses).

Each item becomes one Dagster asset check, so its `check_name` is stable, unique within the contract, a
valid check name (`^[A-Za-z0-9_]+$`, at most 63 characters) and reads as what it checks
(`greeting_md_contains_hello`). A name is never secret: what a command's argv or a `contains`/`matches` text
adds to it passes `name_words` (secret patterns redacted, then plain words only). `label` stays Prompt
Runner's checklist label (the checklist file is byte-compatible); `description` is the sentence people read in
the UI, secret patterns redacted.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from awp_pipelines.core.packet.model.contract import (
    CommandCheck,
    ContainsCheck,
    DocCheck,
    GlobCheck,
    JsonCheck,
    MatchesCheck,
    ReposCleanCheck,
    SourceAbsentCheck,
    VerifyContract,
    YamlCheck,
    command_text,
)
from awp_pipelines.core.records.plural import counted
from awp_pipelines.core.records.redact import redact

from .clause_table import CLAUSE, CLAUSE_TABLE
from .paths import display, written_repo_path

MAX_CHECK_NAME = 63
# A word a name may keep from text that may hold a secret: letters only (at most 20), or at most 4 characters.
# A credential is neither: it is long and mixes letters and digits (`canary_7f3a9c1e5b2d`, `api03_QQQ…`).
_PLAIN_WORD = re.compile(r"[a-z]{1,20}|[a-z0-9]{1,4}")


class ContractItem(BaseModel):
    """One verifiable item of a contract, known before anything runs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: str = Field(description="The clause the item comes from.")
    check_name: str = Field(description="Unique within the contract; a valid Dagster asset check name.")
    label: str = Field(description="Prompt Runner's checklist label (one line).")
    description: str = Field("", description="What the item demands, as a sentence people read.")
    repo: str | None = Field(default=None, description="Repository as written; None means the default.")
    path: str | None = Field(default=None, description="Path as written; None for commands and whole clauses.")


def entry_label(clause: str, entry: Any) -> str:
    """Prompt Runner's checklist label for one entry of a clause."""
    if clause == "doc":
        min_lines = entry.min_lines if isinstance(entry, DocCheck) else 1
        return f"doc: {display(entry)} (non-blank; {counted(min_lines, 'line')} advisory)"  # never "1 lines"
    if clause == "commands":
        return f"{CLAUSE[clause].label}: {command_text(entry, with_repo=True)}"
    if clause == "repos_clean":
        what = CLAUSE[clause].label + (" and pushed" if entry.pushed else "")
        return f"{what}: {entry.repo or '(default)'}"
    return f"{CLAUSE[clause].label}: {display(entry)}"


def _what(entry: Any) -> str:
    """What a contains/matches item looks for: two items on one file must read differently in the UI."""
    if isinstance(entry, ContainsCheck):
        return f" ({entry.text!r})"
    if isinstance(entry, MatchesCheck):
        return f" (/{entry.pattern}/)"
    return ""


def planned_items(contract: VerifyContract) -> list[tuple[ContractItem, Any]]:
    """Each item with what it checks: one entry, or the clause's entry list for whole clauses."""
    planned: list[tuple[ContractItem, Any]] = []
    used: set[str] = set()
    for clause in CLAUSE_TABLE:
        entries = clause.entries(contract)
        if not entries:
            continue
        if clause.shape == "whole":
            planned.append((_whole_item(clause.name, entries, used), entries))
            continue
        for index, entry in enumerate(entries, start=1):
            planned.append((_entry_item(clause.name, index, entry, used), entry))
    return planned


def contract_items(contract: VerifyContract) -> list[ContractItem]:
    """The contract's items in a stable order: clause order above, then entry order."""
    return [item for item, _ in planned_items(contract)]


def _entry_item(clause: str, index: int, entry: Any, used: set[str]) -> ContractItem:
    if isinstance(entry, CommandCheck):
        repo, path = entry.repo, None
    else:
        repo, path = written_repo_path(entry)
    return ContractItem(
        kind=clause,
        check_name=unique_name(entry_check_name(clause, entry) or f"{clause}_{index}", used),
        label=entry_label(clause, entry) + _what(entry),
        description=redact(entry_description(clause, entry)),
        repo=repo,
        path=path,
    )


def _whole_item(clause: str, entries: Sequence[Any], used: set[str]) -> ContractItem:
    if clause == "repos_clean":
        repos = {entry.repo for entry in entries}
        label = "; ".join(entry_label(clause, entry) for entry in entries)
        description = "; ".join(entry_description(clause, entry) for entry in entries)
    else:
        repos = {written_repo_path(entry)[0] for entry in entries}
        label = "only these paths changed: " + ", ".join(display(entry) for entry in entries)
        description = "Only " + ", ".join(display(entry) for entry in entries) + " changed"
    repo = repos.pop() if len(repos) == 1 else None
    return ContractItem(kind=clause, check_name=unique_name(clause, used), label=label, description=description,
                        repo=repo, path=None)


def entry_check_name(clause: str, entry: Any) -> str:
    """The path (with its repo when written), what is checked, and for contains/matches what is looked for.
    Empty when nothing readable is left (the caller falls back to clause and index)."""
    if isinstance(entry, CommandCheck):
        return _cut(f"command_{name_words(command_text(entry, with_repo=True))}")
    subject = slug(display(entry))
    if not subject:
        return ""
    what = ""
    if isinstance(entry, ContainsCheck):
        what = name_words(entry.text)
    elif isinstance(entry, MatchesCheck):
        what = name_words(entry.pattern)
    return _join(subject, CLAUSE[clause].verb, what)


def _join(subject: str, verb: str, what: str) -> str:
    """Cut to the length limit keeping the verb: `what` gives way first, then the subject's tail."""
    keep = min(len(subject), 24)
    if what:
        what = what[: max(0, MAX_CHECK_NAME - len(verb) - keep - 2)].rstrip("_")
    room = MAX_CHECK_NAME - len(verb) - 1 - (len(what) + 1 if what else 0)
    return "_".join(part for part in (subject[:room].rstrip("_"), verb, what) if part)


def entry_description(clause: str, entry: Any) -> str:
    """What one entry demands, in words: `GREETING.md contains “Hello”`."""
    if isinstance(entry, CommandCheck):
        where = f" (in {entry.repo})" if entry.repo else ""
        return f"`{command_text(entry)}` exits 0{where}"
    if isinstance(entry, ReposCleanCheck):
        done = "committed and pushed" if entry.pushed else "committed"
        return f"Everything in {entry.repo or 'the default repo'} is {done}"
    what = display(entry)
    if isinstance(entry, ContainsCheck):
        return f"{what} contains “{entry.text}”"
    if isinstance(entry, MatchesCheck):
        return f"{what} matches /{entry.pattern}/"
    if clause == "doc":
        return _doc_description(what, entry if isinstance(entry, DocCheck) else None)
    if isinstance(entry, YamlCheck):
        return f"{what} parses as YAML" + (f" with a {entry.root} at its root" if entry.root else "")
    if isinstance(entry, JsonCheck):
        return f"{what} parses as JSON of the declared shape"
    if isinstance(entry, GlobCheck):
        most = f" and at most {entry.max_matches}" if entry.max_matches is not None else ""
        files = "file" if entry.min_matches == 1 and not most else "files"
        empty = ", none empty" if entry.non_empty else ""
        return f"{what} matches at least {entry.min_matches}{most} {files}{empty}"
    if isinstance(entry, SourceAbsentCheck):
        return f"No source under {what} matches {', '.join(f'/{p}/' for p in entry.patterns)}"
    return f"{what} exists" if clause == "files_exist" else f"{what} does not exist"


def _doc_description(what: str, entry: DocCheck | None) -> str:
    parts = [f"{what} is a written document: not blank"]
    if entry is not None and entry.requires_sections:
        parts.append("has " + ", ".join(f"“{s}”" for s in entry.requires_sections))
    markers = entry.markers() if entry is not None else ()
    if markers:
        parts.append("no " + ", ".join(m for m in markers if m.isalpha()) + " markers")
    if entry is not None and entry.min_lines > 1:
        parts.append(f"{entry.min_lines} lines or more advised")
    return ", ".join(parts)


def slug(words: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", words.lower()).strip("_")


def name_words(text: str) -> str:
    """The slug of text that may hold a secret (a command's argv, a `contains` text), fit for a name stored
    forever (check names reach Dagster's snapshots, run databases and the UI): secret patterns redacted first,
    then only plain words kept. A credential that matches no pattern (an account's literal key) is dropped
    too, with no catalog needed: the name is the same wherever it is computed."""
    return "_".join(word for word in slug(redact(text)).split("_") if _PLAIN_WORD.fullmatch(word))


def _cut(name: str) -> str:
    return name[:MAX_CHECK_NAME].rstrip("_")


def unique_name(name: str, used: set[str]) -> str:
    """`name`, or `name_2`, `name_3`… when an earlier item of the contract took it (stable: contract order)."""
    candidate, n = name, 1
    while candidate in used:
        n += 1
        suffix = f"_{n}"
        candidate = name[: MAX_CHECK_NAME - len(suffix)].rstrip("_") + suffix
    used.add(candidate)
    return candidate
