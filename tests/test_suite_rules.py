"""The suite's own rules, from tests/conftest.py: under CI=true nothing skips."""

from __future__ import annotations

from pathlib import Path

import pytest

CONFTEST = Path(__file__).with_name("conftest.py")


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

    tests = Path(__file__).resolve().parent
    defined = {m.group(1) for path in tests.rglob("test_*.py")
               for m in re.finditer(r"^def (test_\w+)\(", path.read_text(encoding="utf-8"), re.MULTILINE)}
    assert {name.split("[")[0] for name in EXTENDED} - defined == set()
