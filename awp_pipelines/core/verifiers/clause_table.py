"""The verifier's clauses, once: one row per `verify:` key, in Prompt Runner's verification order.

Everything else derives from this table: the items of a contract and their order (`items.py`), Prompt Runner's
checklist labels (`items.entry_label`, `checklist.py`), the asset check names, the check each item runs
(`engine.py`) and the entries lint walks. A test holds the table and `VerifyContract`'s fields together, so a
clause added to the model without a row fails the suite.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from awp_pipelines.core.packet.model.contract import VerifyContract

from .clauses.changed_paths import changed_paths_only
from .clauses.commands import commands
from .clauses.contains import contains
from .clauses.doc import doc
from .clauses.files import files_absent, files_exist
from .clauses.globs import glob_count
from .clauses.json_file import json_file
from .clauses.matches import matches
from .clauses.outcome import Outcome
from .clauses.repos_clean import repos_clean
from .clauses.source_absent import source_absent
from .clauses.yaml_file import yaml_file
from .context import VerifyContext

Check = Callable[[Any, VerifyContext], Outcome]
# `each`: one item (one asset check) per entry; `whole`: the clause judges a whole repository state, so it is
# one item however many entries it lists.
Shape = Literal["each", "whole"]


@dataclass(frozen=True)
class Clause:
    """One clause of the `verify:` block."""

    name: str  # the key written in YAML, and each item's `kind`
    field: str  # the VerifyContract attribute holding its entries
    check: Check  # judges one entry (`each`) or the clause's whole entry list (`whole`)
    label: str  # Prompt Runner's checklist label before `: <entry>`
    verb: str  # what an item's check name says after the path (`greeting_md_exists`); "" when not path-named
    shape: Shape = "each"

    def entries(self, contract: VerifyContract) -> list[Any]:
        return list(getattr(contract, self.field))


CLAUSE_TABLE: tuple[Clause, ...] = (
    Clause("files_exist", "files_exist", files_exist, "file exists", "exists"),
    Clause("files_absent", "files_absent", files_absent, "file absent", "absent"),
    Clause("contains", "contains", contains, "contains", "contains"),
    Clause("matches", "matches", matches, "matches", "matches"),
    Clause("doc", "doc", doc, "doc", "is_a_document"),
    Clause("yaml", "yaml", yaml_file, "YAML parses", "is_yaml"),
    # `json` would shadow BaseModel.json, so the model's attribute is `json_` (its alias is the YAML key).
    Clause("json", "json_", json_file, "JSON contract", "is_json"),
    Clause("glob", "glob", glob_count, "glob contract", "glob"),
    Clause("source_absent", "source_absent", source_absent, "forbidden source absent", "has_no_forbidden_source"),
    Clause("commands", "commands", commands, "command", ""),
    Clause("changed_paths_only", "changed_paths_only", changed_paths_only, "changed path allowed", "", "whole"),
    Clause("repos_clean", "repos_clean", repos_clean, "repo committed", "", "whole"),
)

CLAUSES: tuple[str, ...] = tuple(clause.name for clause in CLAUSE_TABLE)
CLAUSE: Mapping[str, Clause] = {clause.name: clause for clause in CLAUSE_TABLE}
