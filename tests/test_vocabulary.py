"""One vocabulary: each word of the domain is defined in one place, and `awp/` keys are spelled only in tags.py.

The greps read the package's source with `ast`, so comments and docstrings may name a word or a key freely;
only code that defines or spells one counts.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "awp_pipelines"
KEY_HOME = PACKAGE / "tags.py"
# `awp/` starting a string or after a non-path character: `refs/awp/…` and `.awp/…` are paths, not keys.
AWP_KEY = re.compile(r"(?:^|[^./\w])awp/")


def _modules() -> Iterator[tuple[Path, ast.Module]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path, ast.parse(path.read_text(encoding="utf-8"), str(path))


def _docstrings(tree: ast.Module) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def awp_key_literals(path: Path, tree: ast.Module) -> list[str]:
    """`file:line: 'literal'` for each string in code (not a docstring) that spells an `awp/` key."""
    docs = _docstrings(tree)
    return [f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: {node.value!r}" for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
            and AWP_KEY.search(node.value)]


def test_no_module_but_tags_spells_an_awp_key() -> None:
    spelled = [hit for path, tree in _modules() if path != KEY_HOME for hit in awp_key_literals(path, tree)]
    assert spelled == [], "use the constants of awp_pipelines/tags.py:\n" + "\n".join(spelled)


def test_the_key_grep_finds_a_literal_and_passes_over_paths_and_docstrings() -> None:
    tree = ast.parse('"""Reads `awp/result`."""\nA = {"awp/result": 1}\nB = "refs/awp/x"\nC = ".awp/events"\n')
    assert awp_key_literals(PACKAGE / "x.py", tree) == ["awp_pipelines/x.py:2: 'awp/result'"]
    home = awp_key_literals(KEY_HOME, ast.parse(KEY_HOME.read_text()))
    assert [hit.rsplit(": ", 1)[1] for hit in home] == ["'awp/'"]  # tags.py spells the prefix once
