"""The ledger (orchestration/ledger/) is the only importer of dagster_compat's state modules: the key-value
table, the event log, the pools and the runs' statuses. Execution, executor, config schema, log mirrors and the
names Dagster owns are not state and are imported where they are used (docs/architecture.md)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "awp_pipelines"
STATE = {"kvs", "events", "pools", "runs"}
LEDGER = PACKAGE / "orchestration" / "ledger"


def state_imports(source: str) -> set[str]:
    """The dagster_compat state modules a module's source imports (at module level or inside functions)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "awp_pipelines.dagster_compat":
                found |= {alias.name for alias in node.names} & STATE
            elif node.module.startswith("awp_pipelines.dagster_compat."):
                found |= {node.module.rsplit(".", 1)[1]} & STATE
        elif isinstance(node, ast.Import):
            found |= {a.name.rsplit(".", 1)[1] for a in node.names
                      if a.name.startswith("awp_pipelines.dagster_compat.")} & STATE
    return found


def test_the_finder_sees_every_spelling_of_a_state_import() -> None:
    assert state_imports("from awp_pipelines.dagster_compat.kvs import kv_get") == {"kvs"}
    assert state_imports("def f():\n    from awp_pipelines.dagster_compat import pools, tags") == {"pools"}
    assert state_imports("import awp_pipelines.dagster_compat.events") == {"events"}
    assert state_imports("from awp_pipelines.dagster_compat.execution import execute_run") == set()


def test_no_module_outside_the_ledger_imports_a_state_module_of_dagster_compat() -> None:
    outside = {str(path.relative_to(PACKAGE)): found for path in sorted(PACKAGE.rglob("*.py"))
               if not path.is_relative_to(LEDGER) and not path.is_relative_to(PACKAGE / "dagster_compat")
               and (found := state_imports(path.read_text()))}
    assert outside == {}
