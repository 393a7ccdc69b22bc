"""tools/import_graph.py: a folder's shape counted from its imports (the figures docs/architecture.md and the
ledger's note quote)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from repo_paths import REPO_ROOT

from tools.import_graph import import_graph


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, source in {"pkg/__init__.py": "", "pkg/inner/__init__.py": "", **files}.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(source)
    return tmp_path / "pkg" / "inner"


def test_every_kind_of_import_is_an_arrow_and_the_chain_runs_top_to_bottom(tmp_path: Path) -> None:
    inner = _package(tmp_path, {
        "pkg/inner/a.py": "from pkg.inner import b\n",  # a module named through its package
        "pkg/inner/b.py": "def f():\n    from .c import x\n",  # relative, inside a function
        "pkg/inner/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.inner.d\nx = 1\n",
        "pkg/inner/d.py": "import os\n",
        "pkg/inner/e.py": "from pkg.inner.d import y\n",
        "pkg/outer.py": "from pkg.inner.a import z\nfrom pkg.inner import e\n",
    })
    summary = import_graph(inner).summary()
    assert summary["arrows"] == 4 and summary["files"] == 6  # the folder's __init__ counts as a file, no arrow
    assert summary["floors"] == 4
    assert summary["longest_chain"] == ["pkg.inner.a", "pkg.inner.b", "pkg.inner.c", "pkg.inner.d"]
    assert summary["outside_importers"] == {"pkg.outer": ["pkg.inner.a", "pkg.inner.e"]}
    assert summary["loops"] == []


def test_a_loop_is_named_and_counted_as_one_floor(tmp_path: Path) -> None:
    inner = _package(tmp_path, {
        "pkg/inner/a.py": "from pkg.inner import b\n",
        "pkg/inner/b.py": "def f():\n    from pkg.inner import a\n    from pkg.inner import c\n",
        "pkg/inner/c.py": ""})
    summary = import_graph(inner).summary()
    assert summary["loops"] == [["pkg.inner.a", "pkg.inner.b"]]
    assert summary["floors"] == 2 and summary["longest_chain"][-1] == "pkg.inner.c"


def test_the_command_prints_json_and_refuses_a_folder_that_is_no_package(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, str(REPO_ROOT / "tools" / "import_graph.py"),
                          "awp_pipelines/orchestration/ledger", "--json"], cwd=REPO_ROOT, capture_output=True,
                         text=True, check=True)
    figures = json.loads(run.stdout)
    assert figures["folder"] == "awp_pipelines.orchestration.ledger" and figures["loops"] == []
    assert len(figures["longest_chain"]) == figures["floors"]
    refused = subprocess.run([sys.executable, str(REPO_ROOT / "tools" / "import_graph.py"), str(tmp_path)],
                             capture_output=True, text=True)
    assert refused.returncode == 2 and "not a package folder" in refused.stderr
