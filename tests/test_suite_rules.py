"""The suite's own rules: under CI=true nothing skips (tests/conftest.py), and the tests are laid out by the
package's folders."""

from __future__ import annotations

import pytest
from repo_paths import REPO_ROOT, TESTS

CONFTEST = TESTS / "conftest.py"
# Test folders that are not the path of a package folder: whole runs, crashes and races (e2e/ ... reliability/);
# folders older than this layout, for core/providers, core/isolation, core/verifiers and orchestration/ledger; the
# bench scripts (bench/), the repo's tools (tools/) and the SDK (api.py).
BY_KIND = {"e2e", "e2e/security", "daemon", "ui", "reliability", "providers", "isolation", "verifiers", "ledger",
           "bench", "tools", "api"}
# At the root: what tests the suite itself or the whole package.
AT_ROOT = {"test_suite_rules.py", "test_vocabulary.py"}


def test_under_ci_a_skipped_test_fails_and_says_why(pytester: pytest.Pytester,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makeconftest(CONFTEST.read_text())
    pytester.makepyfile("import pytest\n\n\ndef test_needs_a_server():\n    pytest.skip('no server here')\n")
    monkeypatch.delenv("CI", raising=False)
    pytester.runpytest().assert_outcomes(skipped=1)
    monkeypatch.setenv("CI", "true")
    in_ci = pytester.runpytest()
    in_ci.assert_outcomes(failed=1)
    in_ci.stdout.fnmatch_lines(["*skipped under CI=true, where every test must run: *no server here*"])


def test_each_scenario_left_to_make_test_all_names_a_test_that_exists() -> None:
    """tests/suite_tiers.py names tests by their function: a renamed or removed one would silently run again
    (or never), so each name must be defined by a test module."""
    import re

    from suite_tiers import EXTENDED

    defined = {m.group(1) for path in TESTS.rglob("test_*.py")
               for m in re.finditer(r"^def (test_\w+)\(", path.read_text(encoding="utf-8"), re.MULTILINE)}
    assert {name.split("[")[0] for name in EXTENDED} - defined == set()


def test_each_heavy_entry_names_a_module_and_test_that_exist() -> None:
    """tests/suite_tiers.py HEAVY names modules and tests by path: a moved or renamed one would silently come back
    into `make test-fast` (or a misspelt key would match nothing), so each must exist."""
    import re

    from suite_tiers import HEAVY

    def exists(key: str) -> bool:
        module, _, test = key.partition("::")
        path = REPO_ROOT / module
        return path.is_file() and (not test or test.startswith("*[") or bool(
            re.search(rf"^def {re.escape(test)}\(", path.read_text(encoding="utf-8"), re.MULTILINE)))

    assert [key for key in HEAVY if not exists(key)] == []


def test_a_heavy_entry_marks_its_module_its_test_or_its_case_and_nothing_else() -> None:
    from suite_tiers import heavy

    assert heavy("tests/isolation/test_sandbox_unavailable.py::test_x[a-b]")  # a whole module
    assert heavy("tests/api/test_sdk.py::test_importing_the_sdk_imports_nothing_of_dagster")  # one test
    assert heavy("tests/ledger/test_ledger_contract.py::test_x[sqlite]")  # one case of each test
    assert not heavy("tests/ledger/test_ledger_contract.py::test_x[memory]")
    assert not heavy("tests/api/test_sdk.py::test_something_else")


def test_each_test_module_sits_in_the_folder_of_what_it_tests() -> None:
    package = REPO_ROOT / "awp_pipelines"
    misplaced = sorted(str(path.relative_to(TESTS)) for path in TESTS.rglob("test_*.py")
                       if (path.parent == TESTS and path.name not in AT_ROOT)
                       or (path.parent != TESTS and path.parent.relative_to(TESTS).as_posix() not in BY_KIND
                           and not (package / path.parent.relative_to(TESTS)).is_dir()))
    assert misplaced == [], "move each to tests/<its package folder>/ (tests/core/records/ for core/records/)"
