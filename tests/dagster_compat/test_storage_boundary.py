"""Dagster's internals behind one package (issue 25 item 2): awp_pipelines/dagster_compat/ is the only place that
imports `dagster._…`, reaches Dagster's storages, patches a Dagster attribute or spells a name Dagster owns
(`dagster/…` tags and metadata keys: dagster_compat/tags.py). A Dagster upgrade touches that package alone, and
each use there has its canary (tests/dagster_compat/test_dagster_compat.py).

The finder walks each module's syntax tree, so it sees what a regex over lines misses: an attribute patch, a
private module named in a string (getattr, importlib, monkeypatch targets, preload lists) and a name spelled
over several lines."""

from __future__ import annotations

import ast

from repo_paths import REPO_ROOT

PACKAGE = REPO_ROOT / "awp_pipelines"
HOME = PACKAGE / "dagster_compat"
# The storages behind the instance, and the calls that reach their tables: instance.event_log_storage and
# instance.run_storage, the key-value table, pool slots and queue rows.
STORAGE_ATTRIBUTES = frozenset({
    "event_log_storage", "run_storage", "schedule_storage", "get_cursor_values", "set_cursor_values",
    "claim_concurrency_slot", "free_concurrency_slot_for_step", "free_concurrency_slots_for_run",
    "get_concurrency_keys", "get_concurrency_info", "set_concurrency_slots", "index_connection",
})


def _is_private(module: str) -> bool:
    return module == "dagster._" or module.startswith("dagster._") or module.startswith("dagster_shared._")


def _dagster_owned(text: str) -> bool:
    """A private module path, or a tag or metadata key in Dagster's own namespace."""
    return "dagster._" in text or text.startswith(("dagster/", ".dagster/"))


def internals_in(text: str) -> list[str]:
    """Every use of Dagster's internals in a module's source, as `line: what`."""
    tree = ast.parse(text)
    found: list[tuple[int, str]] = []
    dagster_names: set[str] = set()  # names bound to Dagster modules or objects in this module
    imported: set[str] = set()  # every imported name: patching an attribute of one is patching someone's module
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            imported |= {alias.asname or alias.name.split(".")[0] for alias in node.names}
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in ("dagster", "dagster_shared"):
                    dagster_names.add(alias.asname or alias.name.split(".")[0])
                if _is_private(alias.name):
                    found.append((node.lineno, f"import {alias.name}"))
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if node.module.split(".")[0] in ("dagster", "dagster_shared"):
                dagster_names |= {alias.asname or alias.name for alias in node.names}
            private = [a.name for a in node.names if a.name.startswith("_")]
            if _is_private(node.module) or (node.module in ("dagster", "dagster_shared") and private):
                found.append((node.lineno, f"from {node.module} import {', '.join(a.name for a in node.names)}"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            if node.attr in STORAGE_ATTRIBUTES:
                found.append((node.lineno, f".{node.attr}"))
            elif (node.attr.startswith("_") and not node.attr.startswith("__") and isinstance(node.value, ast.Name)
                  and node.value.id in dagster_names):
                found.append((node.lineno, f"{node.value.id}.{node.attr}"))
        elif isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                root = target
                while isinstance(root, ast.Attribute):
                    root = root.value
                if target is not root and isinstance(root, ast.Name) and root.id in imported | dagster_names:
                    found.append((node.lineno, f"patches {ast.unparse(target)}"))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in (
                "setattr", "getattr", "delattr") and node.args and isinstance(node.args[0], ast.Name) \
                and node.args[0].id in dagster_names:
            found.append((node.lineno, f"{node.func.id}({node.args[0].id}, …)"))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _dagster_owned(node.value):
            found.append((node.lineno, repr(node.value)))
    return [f"{line}: {what}" for line, what in sorted(set(found))]


def test_the_finder_sees_each_kind_of_internal_and_passes_public_dagster() -> None:
    source = '''
import dagster._core.storage.sql
import dagster._core.storage.sql as sql
from dagster._core.storage.tags import SENSOR_NAME_TAG
from dagster import _check
from dagster import DagsterInstance
from dagster._core.execution import compute_logs
from awp_pipelines.somewhere import logs_module
import dagster

instance.run_storage.set_cursor_values({})
storage = instance.event_log_storage
storage.claim_concurrency_slot(pool, run, step)
compute_logs.subprocess = None
logs_module.subprocess = None
dagster._core.storage.sql.ScriptDirectory = object
setattr(compute_logs, "subprocess", None)
getattr(dagster, "_core")
importlib.import_module("dagster._core.run_coordinator")
TAG = {".dagster/repository": "x"}
ROOT = (
    "dagster/root_run_id")
'''
    hits = internals_in(source)
    for expected in ["import dagster._core.storage.sql", "from dagster._core.storage.tags import SENSOR_NAME_TAG",
                     "from dagster import _check", ".run_storage", ".set_cursor_values", ".event_log_storage",
                     ".claim_concurrency_slot", "patches compute_logs.subprocess", "patches logs_module.subprocess",
                     "patches dagster._core.storage.sql.ScriptDirectory", "dagster._core", "setattr(compute_logs, …)",
                     "getattr(dagster, …)", "'dagster._core.run_coordinator'", "'.dagster/repository'",
                     "'dagster/root_run_id'"]:
        assert any(hit.endswith(": " + expected) for hit in hits), (expected, hits)
    public = ("from dagster import DagsterInstance, RunsFilter, AssetKey\n"
              "instance.get_run_records()\nkey = AssetKey('x')\nkey.path = []\n"
              "TAG = 'awp/packet'\n")
    assert internals_in(public) == []


def test_no_module_but_dagster_compat_touches_dagster_internals() -> None:
    found = {str(path.relative_to(PACKAGE)): hits for path in sorted(PACKAGE.rglob("*.py"))
             if not path.is_relative_to(HOME) and (hits := internals_in(path.read_text(encoding="utf-8")))}
    assert found == {}, "Dagster internals outside awp_pipelines/dagster_compat/:\n" + "\n".join(
        f"{path} {hit}" for path, hits in found.items() for hit in hits)
    assert all(internals_in(path.read_text(encoding="utf-8")) for path in HOME.glob("*.py")
               if path.name not in ("__init__.py",))  # and each compat module is there for a reason


def test_dagster_owned_tag_names_are_spelled_only_in_the_tags_module() -> None:
    """Inside the compat package too: a `dagster/…` name anywhere but dagster_compat/tags.py is a second
    spelling of a name Dagster owns."""
    spelled = {path.name: [hit for hit in internals_in(path.read_text(encoding="utf-8")) if "'dagster/" in hit
                           or "'.dagster/" in hit] for path in HOME.glob("*.py") if path.name != "tags.py"}
    assert {name: hits for name, hits in spelled.items() if hits} == {}
