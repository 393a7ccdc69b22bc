"""files_exist, files_absent, contains, matches."""

from __future__ import annotations

import os

from verify_helpers import Workspace


def test_files_exist_passes_for_a_file_and_a_directory(ws: Workspace) -> None:
    ws.write("src/a.py")
    report = ws.verify({"files_exist": ["src/a.py", "src"]})
    assert [item.passed for item in report.items] == [True, True]


def test_files_exist_fails_for_a_missing_file(ws: Workspace) -> None:
    item = ws.item({"files_exist": ["hello.txt"]})
    assert not item.passed and item.fault is None
    assert item.details == [f"missing: {ws.repos['app'] / 'hello.txt'}"]


def test_files_absent_passes_when_missing_and_fails_when_present(ws: Workspace) -> None:
    assert ws.item({"files_absent": ["build.log"]}).passed
    ws.write("build.log")
    assert not ws.item({"files_absent": ["build.log"]}).passed


def test_files_absent_counts_a_dangling_symlink_as_present(ws: Workspace) -> None:
    os.symlink("nowhere", ws.repos["app"] / "stale")
    assert not ws.item({"files_absent": ["stale"]}).passed


def test_contains_passes_when_the_text_is_there(ws: Workspace) -> None:
    ws.write("hello.txt", "Hello from Prompt Runner\n")
    assert ws.item({"contains": [{"path": "hello.txt", "text": "from Prompt"}]}).passed


def test_contains_fails_on_other_text_and_is_case_sensitive(ws: Workspace) -> None:
    ws.write("hello.txt", "Hello from Prompt Runner\n")
    item = ws.item({"contains": [{"path": "hello.txt", "text": "hello"}]})
    assert not item.passed and item.details == ["text not found: 'hello'"]


def test_contains_fails_on_a_missing_file(ws: Workspace) -> None:
    item = ws.item({"contains": [{"path": "hello.txt", "text": "x"}]})
    assert not item.passed and item.details[0].startswith("missing file:")


def test_contains_fails_on_a_directory_without_raising(ws: Workspace) -> None:
    ws.write("dir/a")
    item = ws.item({"contains": [{"path": "dir", "text": "x"}]})
    assert not item.passed and item.fault is None and item.details[0].startswith("not a regular file (a directory)")


def test_matches_searches_anywhere_in_the_file(ws: Workspace) -> None:
    ws.write("VERSION", "name: x\nversion: 1.2.3\n")
    assert ws.item({"matches": [{"path": "VERSION", "pattern": r"version: \d+\.\d+\.\d+"}]}).passed


def test_matches_fails_when_the_pattern_is_absent_or_the_file_missing(ws: Workspace) -> None:
    ws.write("VERSION", "version: one\n")
    assert not ws.item({"matches": [{"path": "VERSION", "pattern": r"\d"}]}).passed
    assert not ws.item({"matches": [{"path": "NOPE", "pattern": r"\d"}]}).passed
