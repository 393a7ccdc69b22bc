"""tools/relayout.py, the move into the layout of docs/architecture.md as one table: what it rewrites, that a
second run changes nothing, and that the repository holds no reference to an old path (a branch merged with
one runs `python tools/relayout.py --rewrite-only`)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

REPO_ROOT = Path(__file__).resolve().parent.parent


def _relayout() -> ModuleType:
    spec = importlib.util.spec_from_file_location("relayout", REPO_ROOT / "tools" / "relayout.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["relayout"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


relayout = _relayout()
OLD_CODE = '''from awp_pipelines import interrupts, progress, tags
from awp_pipelines import api, plan
from awp_pipelines import profile as home
import awp_pipelines.launches
from awp_pipelines.model_lists import offered
from awp_pipelines.model.contract import Contract

monkeypatch.setattr("awp_pipelines.launches.next_launches", fake)
LISTS = "awp_pipelines.model_lists"  # not the model package, whose name it starts with
KEPT = "awp_pipelines.definitions"  # relayout: keep
'''
NEW_CODE = '''from awp_pipelines.core.engine import interrupts, progress
from awp_pipelines.core.records import run_tags as tags
from awp_pipelines import api, plan
from awp_pipelines.core.packet import home_profile as home
import awp_pipelines.core.decisions.next_launches
from awp_pipelines.core.planning.model_lists import offered
from awp_pipelines.core.packet.model.contract import Contract

monkeypatch.setattr("awp_pipelines.core.decisions.next_launches.next_launches", fake)
LISTS = "awp_pipelines.core.planning.model_lists"  # not the model package, whose name it starts with
KEPT = "awp_pipelines.definitions"  # relayout: keep
'''


def test_imports_submodule_forms_mock_targets_and_paths_are_rewritten_once() -> None:
    """`from awp_pipelines import x` splits by new package (a renamed module keeps its local name); an SDK name
    (`plan`, now the root's function) and a line marked `relayout: keep` stay; a second pass changes nothing."""
    path = Path("tests/test_x.py")
    assert relayout.rewrite(path, OLD_CODE) == NEW_CODE
    assert relayout.rewrite(path, NEW_CODE) == NEW_CODE
    doc = "See `awp_pipelines/tags.py` and awp_pipelines/verifiers/clauses/, not awp_pipelines/model_lists.py.\n"
    assert relayout.rewrite(Path("docs/x.md"), doc) == (
        "See `awp_pipelines/core/records/run_tags.py` and awp_pipelines/core/verifiers/clauses/, not "
        "awp_pipelines/core/planning/model_lists.py.\n")


def test_an_sdk_name_imported_as_the_module_it_was_is_rewritten() -> None:
    """A branch written before the move imports the module `plan` and reads its attributes: that one moves."""
    code = "from awp_pipelines import api, plan\n\nreal = plan.build_plan\n"
    assert relayout.rewrite(Path("tests/test_x.py"), code) == (
        "from awp_pipelines import api\nfrom awp_pipelines.core.planning import plan\n\nreal = plan.build_plan\n")


def test_a_relative_import_that_left_its_package_becomes_absolute() -> None:
    """verifiers/git.py imported `..workspace`, a module that moved to core/records/; a relative import
    within the moved package stays relative."""
    code = "from ..workspace import git\nfrom .process import run_bounded\n"
    assert relayout.rewrite(Path("awp_pipelines/core/verifiers/git.py"), code) == (
        "from awp_pipelines.core.records.workspace import git\nfrom .process import run_bounded\n")


def test_the_repository_holds_no_old_path_and_nothing_is_left_to_move() -> None:
    done = subprocess.run([sys.executable, "tools/relayout.py", "--check"], cwd=REPO_ROOT, capture_output=True,
                          text=True)
    assert done.returncode == 0, "run `python tools/relayout.py --rewrite-only`:\n" + done.stdout
    assert "nothing to do" in done.stdout


SPLIT_SOURCE = '''"""Old module."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from dagster import AssetKey, DagsterInstance

if TYPE_CHECKING:
    from dagster._core.x import Private

# --- Keys ---

# a comment that goes with KEY
KEY = AssetKey("k")


def read(instance: DagsterInstance) -> Private:
    return json.loads(str(KEY))


@staticmethod
def write() -> str:
    return json.dumps(read(None))
'''


def test_a_split_moves_each_statement_with_its_comments_and_only_the_imports_it_uses() -> None:
    """Each statement lands in the file listing its name (its comment along, the `# ---` ruler dropped), with
    the imports it uses, TYPE_CHECKING ones under the guard, and an import of what it uses from a sister file."""
    texts = relayout.split_text(SPLIT_SOURCE, {"pkg/a.py": ["KEY", "read"], "pkg/b.py": ["write"]})
    a, b = texts["pkg/a.py"], texts["pkg/b.py"]
    assert "# a comment that goes with KEY\nKEY = " in a and "# ---" not in a + b
    assert "from dagster import AssetKey, DagsterInstance" in a and "import json" in a
    assert "if TYPE_CHECKING:\n    from dagster._core.x import Private" in a
    assert "from pkg.a import read" in b and "AssetKey" not in b and "TYPE_CHECKING" not in b
    assert "@staticmethod\ndef write()" in b


def test_a_split_that_misses_a_name_stops_and_names_it() -> None:
    import pytest

    with pytest.raises(SystemExit, match="write"):
        relayout.split_text(SPLIT_SOURCE, {"pkg/a.py": ["KEY", "read"]})


def test_a_split_that_keeps_the_old_file_only_takes_out_what_moves() -> None:
    """With the old file among the targets (`["*"]`), what stays is the old text, verbatim, less the moved
    statements and their comments, plus an import of the moved names it still uses; the moved file imports
    what it uses from the one that stays."""
    source = SPLIT_SOURCE.replace("def write() -> str:\n    return json.dumps(read(None))",
                                  "def write() -> str:\n    return json.dumps(read(None)) + str(KEY)")
    texts = relayout.split_text(source, {"pkg/a.py": ["read"], "pkg/old.py": ["*"]}, stays="pkg/old.py")
    old, a = texts["pkg/old.py"], texts["pkg/a.py"]
    assert old.startswith('"""Old module."""') and "# a comment that goes with KEY\nKEY = " in old
    assert "def read(" not in old and "from pkg.a import read" in old and "def write()" in old
    assert "from pkg.old import KEY" in a and "def read(" in a
