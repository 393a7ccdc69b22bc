"""Run a contract: one ItemResult per ContractItem, same names, same order."""

from __future__ import annotations

from typing import Any

from awp_pipelines.core.packet.model.contract import VerifyContract

from .clause_table import CLAUSE_TABLE, Check
from .clauses.outcome import Outcome
from .context import VerifyContext
from .items import ContractItem, planned_items
from .report import ItemResult, VerifierReport

# Each item's check, by its kind: read off the clause table.
CHECKS: dict[str, Check] = {clause.name: clause.check for clause in CLAUSE_TABLE}


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
