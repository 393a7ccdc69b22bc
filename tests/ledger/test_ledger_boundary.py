"""Who may import which module of dagster_compat (docs/architecture.md, "The ledger"). Every module there is one
of two kinds, and a new one must be given its kind here before anything can import it:

- state: what AWP remembers in a Dagster instance (the key-value table, the event log, the pools, the instance
  itself). Only the ledger's implementation (orchestration/ledger/instance_ledger.py, and instance.py that opens
  the instance) imports these: it is the one reader and writer of the state.
- Dagster-API shims: a name or a call of Dagster's private API that keeps or reads nothing of AWP's (tag names,
  executing a run, the executor, a config schema, the log mirrors' process group, reading migration scripts).
  Any module of the Dagster layer (orchestration/) may import these; a shim imports no state module.

Nothing outside orchestration/ imports dagster_compat at all: the core, the CLI and the SDK reach Dagster through
the orchestration layer."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "awp_pipelines"
COMPAT = PACKAGE / "dagster_compat"
LEDGER = PACKAGE / "orchestration" / "ledger"
DAGSTER_LAYER = PACKAGE / "orchestration"
STATE = {"kvs", "events", "pools", "embedded_instance"}
SHIMS = {"tags", "execution", "executor", "config_schema", "log_mirrors", "migrations", "console_level"}


def compat_imports(source: str) -> set[str]:
    """The dagster_compat modules a module's source imports (at module level or inside functions); the package
    itself as `__init__`."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "awp_pipelines.dagster_compat":
                found |= {alias.name for alias in node.names}
            elif node.module.startswith("awp_pipelines.dagster_compat."):
                found.add(node.module.split(".")[2])
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "awp_pipelines.dagster_compat":
                    found.add("__init__")
                elif alias.name.startswith("awp_pipelines.dagster_compat."):
                    found.add(alias.name.split(".")[2])
    return found


def _importers(where: Path) -> dict[str, set[str]]:
    """Module (relative to the package) → the dagster_compat modules it imports, for every module under `where`
    but dagster_compat itself."""
    return {str(path.relative_to(PACKAGE)): found for path in sorted(where.rglob("*.py"))
            if not path.is_relative_to(COMPAT) and (found := compat_imports(path.read_text()))}


def test_the_finder_sees_every_spelling_of_an_import() -> None:
    assert compat_imports("from awp_pipelines.dagster_compat.kvs import kv_get") == {"kvs"}
    assert compat_imports("def f():\n    from awp_pipelines.dagster_compat import pools, tags") == {"pools", "tags"}
    assert compat_imports("import awp_pipelines.dagster_compat.events") == {"events"}
    assert compat_imports("import awp_pipelines.dagster_compat as compat") == {"__init__"}
    assert compat_imports("from awp_pipelines.dagster_compat.execution import execute_run") == {"execution"}
    assert compat_imports("from awp_pipelines.orchestration.ledger.ledger import Ledger") == set()


def test_every_module_of_dagster_compat_is_state_or_a_shim_never_both() -> None:
    modules = {path.stem for path in COMPAT.glob("*.py")} - {"__init__"}
    assert not STATE & SHIMS
    assert modules == STATE | SHIMS, "give each new dagster_compat module its kind in this test (and the docs)"


# The ledger's implementation: the instance's ledger, and the instance it opens. Not even the rest of the ledger's
# folder (the interface, the memory's ledger, the views' and clients' helpers) reaches the state.
IMPLEMENTATION = {"orchestration/ledger/instance_ledger.py", "orchestration/ledger/instance.py"}


def test_no_module_outside_the_ledger_implementation_imports_a_state_module() -> None:
    outside = {module: found & STATE for module, found in _importers(PACKAGE).items()
               if module not in IMPLEMENTATION and found & STATE}
    assert outside == {}
    assert all((PACKAGE / module).is_relative_to(LEDGER) for module in IMPLEMENTATION)


def test_only_the_dagster_layer_imports_dagster_compat_and_only_what_is_classified() -> None:
    everywhere = _importers(PACKAGE)
    assert {m: f for m, f in everywhere.items() if not (PACKAGE / m).is_relative_to(DAGSTER_LAYER)} == {}
    assert {m: f - STATE - SHIMS for m, f in everywhere.items() if f - STATE - SHIMS} == {}  # no `__init__` use
    assert any(found & SHIMS for found in everywhere.values())  # the rule is about modules that exist


def test_a_shim_imports_no_state_module() -> None:
    """A shim is free to use: one that reached the state would let any module of the layer past the ledger."""
    laundering = {path.stem: found for path in sorted(COMPAT.glob("*.py"))
                  if path.stem in SHIMS and (found := compat_imports(path.read_text()) & STATE)}
    assert laundering == {}
