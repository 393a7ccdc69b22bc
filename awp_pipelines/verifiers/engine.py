"""Run a contract: one ItemResult per ContractItem, same names, same order."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

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
from .contract import VerifyContract
from .items import ContractItem, planned_items
from .report import ItemResult, VerifierReport

CHECKS: dict[str, Callable[[Any, VerifyContext], Outcome]] = {
    "files_exist": files_exist,
    "files_absent": files_absent,
    "contains": contains,
    "matches": matches,
    "doc": doc,
    "yaml": yaml_file,
    "json": json_file,
    "glob": glob_count,
    "source_absent": source_absent,
    "commands": commands,
    "changed_paths_only": changed_paths_only,
    "repos_clean": repos_clean,
}


def run_contract(contract: VerifyContract, ctx: VerifyContext) -> VerifierReport:
    results = [run_item(item, spec, ctx) for item, spec in planned_items(contract)]
    return VerifierReport(prompt_id=ctx.prompt_id, items=results)


def run_item(item: ContractItem, spec: Any, ctx: VerifyContext) -> ItemResult:
    try:
        outcome = CHECKS[item.kind](spec, ctx)
    except Exception as exc:  # noqa: BLE001 - every item must get a result; a crashed check could not run
        outcome = Outcome(False, [f"check crashed: {type(exc).__name__}: {exc}"], fault="verifier_fault")
    return ItemResult(
        kind=item.kind,
        check_name=item.check_name,
        label=item.label,
        description=item.description,
        repo=outcome.repo if outcome.repo is not None else item.repo,
        path=outcome.path if outcome.path is not None else item.path,
        resolved_path=outcome.resolved_path,
        passed=outcome.passed and outcome.fault is None,
        details=outcome.details,
        fault=outcome.fault,
        command=outcome.command,
        cwd=outcome.cwd,
        exit_code=outcome.exit_code,
    )
