"""One place makes the ledger (orchestration/ledger/factory.py): every other module of the package is handed a
`Ledger` and never constructs `InstanceLedger`, nor imports the module that defines it. Walked over the package's
syntax trees (function-level code too), so a new construction anywhere fails here."""

from __future__ import annotations

import ast
from pathlib import Path

from repo_paths import REPO_ROOT

PACKAGE = REPO_ROOT / "awp_pipelines"
FACTORY = "awp_pipelines/orchestration/ledger/factory.py"
CONCRETE = "InstanceLedger"
DEFINED_IN = "awp_pipelines.orchestration.ledger.instance_ledger"


def constructions(source: str) -> list[int]:
    """The lines that call `InstanceLedger(...)`: by its name, by any name it was imported as, or as an attribute
    of its module (`instance_ledger.InstanceLedger(...)`)."""
    tree = ast.parse(source)
    names = {CONCRETE} | {alias.asname for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                          for alias in node.names if alias.name == CONCRETE and alias.asname}
    return sorted(node.lineno for node in ast.walk(tree) if isinstance(node, ast.Call) and (
        (isinstance(node.func, ast.Name) and node.func.id in names)
        or (isinstance(node.func, ast.Attribute) and node.func.attr == CONCRETE)))


def imports_of_the_concrete_ledger(source: str) -> list[int]:
    """The lines that import `instance_ledger` (the module, or a name from it)."""
    def names_it(node: ast.AST) -> bool:
        if isinstance(node, ast.ImportFrom):
            return node.module == DEFINED_IN or (node.module == DEFINED_IN.rpartition(".")[0] and any(
                alias.name == "instance_ledger" for alias in node.names))
        return isinstance(node, ast.Import) and any(alias.name == DEFINED_IN for alias in node.names)

    return [node.lineno for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Import | ast.ImportFrom)
            and names_it(node)]


def test_no_module_but_the_factory_constructs_or_imports_the_instance_ledger() -> None:
    """Every module of the package but the factory (and the class's own), each parsed once."""
    constructed, imported = {}, {}
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(REPO_ROOT).as_posix()
        if where in (FACTORY, DEFINED_IN.replace(".", "/") + ".py"):
            continue
        source = path.read_text(encoding="utf-8")
        if CONCRETE not in source and "instance_ledger" not in source:
            continue  # neither name spelled: nothing to parse
        if lines := constructions(source):
            constructed[where] = lines
        if lines := imports_of_the_concrete_ledger(source):
            imported[where] = lines
    assert constructed == {} and imported == {}
    assert constructions((REPO_ROOT / FACTORY).read_text(encoding="utf-8")) != []  # the one place


def test_the_walk_sees_every_spelling_of_a_construction_and_an_import() -> None:
    assert constructions("def f(i):\n    return InstanceLedger(i)\n") == [2]
    assert constructions("from awp_pipelines.orchestration.ledger.instance_ledger import InstanceLedger as L\n"
                         "x = L(i)\n") == [2]
    assert constructions("from awp_pipelines.orchestration.ledger import instance_ledger\n"
                         "x = instance_ledger.InstanceLedger(i)\n") == [2]
    assert constructions("x = ledger_of(i)\ny = InstanceLedger\n") == []  # a reference is no construction
    assert imports_of_the_concrete_ledger("def f():\n    from awp_pipelines.orchestration.ledger.instance_ledger "
                                          "import InstanceLedger\n") == [2]
    assert imports_of_the_concrete_ledger("from awp_pipelines.orchestration.ledger import instance_ledger\n") == [1]
    assert imports_of_the_concrete_ledger("import awp_pipelines.orchestration.ledger.instance_ledger\n") == [1]
    assert imports_of_the_concrete_ledger("from awp_pipelines.orchestration.ledger.ledger import Ledger\n") == []


def test_the_clients_are_written_against_the_ledger_type() -> None:
    """The compute, the sensors, the driver, the views, the SDK and the CLI name `Ledger` where they take one, and
    `InstanceLedger` nowhere (not even in a type)."""
    clients = [PACKAGE / "api.py", PACKAGE / "cli", *(PACKAGE / "orchestration" / name for name in (
        "compute", "sensors", "driver", "views"))]
    files = [f for c in clients for f in ([c] if c.is_file() else sorted(c.rglob("*.py")))]
    assert [f.relative_to(REPO_ROOT).as_posix() for f in files if CONCRETE in f.read_text(encoding="utf-8")] == []
    handed = [f for f in files if "Ledger" in f.read_text(encoding="utf-8")]
    assert len(handed) >= 10, [f.name for f in handed]  # the type is what they take


def test_the_factory_hands_out_the_ledger_type(tmp_path: Path) -> None:
    from awp_pipelines.orchestration.ledger.factory import open_ledger
    from awp_pipelines.orchestration.ledger.ledger import Ledger

    with open_ledger(tmp_path / "home") as (ledger, instance):
        assert isinstance(ledger, Ledger) and ledger.packet_runs("nothing") == []
        assert instance.root_directory == str((tmp_path / "home").resolve())
