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


# The clauses that read a repository's git data: they run after every other item (a command may have run
# the agent's code), and only once the Attempt's tamper check has passed (VerifyContext.git_guard).
GIT_CLAUSES = frozenset({"repos_clean", "changed_paths_only"})


def run_contract(contract: VerifyContract, ctx: VerifyContext) -> VerifierReport:
    planned = list(planned_items(contract))
    results: dict[int, ItemResult] = {}
    for index, (item, spec) in enumerate(planned):
        if item.kind not in GIT_CLAUSES:
            results[index] = run_item(item, spec, ctx)
    tampered = ctx.git_guard() if ctx.git_guard is not None and len(results) < len(planned) else None
    for index, (item, spec) in enumerate(planned):
        if index not in results:
            results[index] = run_item(item, spec, ctx) if tampered is None else _not_read(item, tampered)
    return VerifierReport(prompt_id=ctx.prompt_id, items=[results[i] for i in range(len(planned))])


def _not_read(item: ContractItem, why: str) -> ItemResult:
    return ItemResult(kind=item.kind, check_name=item.check_name, label=item.label, description=item.description,
                      repo=item.repo, path=item.path, passed=False, fault="verifier_fault",
                      details=[f"not read: {why}"])


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
