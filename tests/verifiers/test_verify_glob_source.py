"""glob cardinality and source_absent scanning."""

from __future__ import annotations

import os

from verify_helpers import Workspace


def test_glob_needs_one_match_by_default(ws: Workspace) -> None:
    assert not ws.item({"glob": [{"path": "docs/*.md"}]}).passed
    ws.write("docs/a.md")
    item = ws.item({"glob": [{"path": "docs/*.md"}]})
    assert item.passed and item.details == ["1 match(es)", "  docs/a.md"]


def test_glob_min_and_max_matches(ws: Workspace) -> None:
    for name in ("a", "b", "c"):
        ws.write(f"docs/{name}.md")
    assert ws.item({"glob": [{"path": "docs/*.md", "min_matches": 3, "max_matches": 3}]}).passed
    assert ws.item({"glob": [{"path": "docs/*.md", "min_matches": 4}]}).details[0] == (
        "3 match(es), fewer than min_matches 4"
    )
    assert ws.item({"glob": [{"path": "docs/*.md", "max_matches": 2}]}).details[0] == (
        "3 match(es), more than max_matches 2"
    )


def test_glob_max_zero_asserts_absence(ws: Workspace) -> None:
    assert ws.item({"glob": [{"path": "**/*.orig", "min_matches": 0, "max_matches": 0}]}).passed
    ws.write("src/deep/x.orig")
    assert not ws.item({"glob": [{"path": "**/*.orig", "min_matches": 0, "max_matches": 0}]}).passed


def test_glob_double_star_matches_at_any_depth(ws: Workspace) -> None:
    ws.write("src/a.py")
    ws.write("src/pkg/sub/b.py")
    assert ws.item({"glob": [{"path": "src/**/*.py", "min_matches": 2}]}).passed


def test_glob_non_empty_rejects_empty_files_and_directories(ws: Workspace) -> None:
    ws.write("out/a.txt", "data")
    ws.write("out/b.txt", "")
    (ws.repos["app"] / "out" / "c.txt").mkdir()
    item = ws.item({"glob": [{"path": "out/*", "non_empty": True}]})
    assert not item.passed and item.details[0] == "empty or not a regular file: out/b.txt, out/c.txt"


def test_glob_match_through_a_symlink_outside_fails(ws: Workspace, tmp_path) -> None:
    (tmp_path / "x.md").write_text("x")
    os.symlink(tmp_path / "x.md", ws.repos["app"] / "x.md")
    assert "escaping the repo" in ws.item({"glob": [{"path": "*.md"}]}).details[0]


def test_source_absent_passes_on_clean_sources(ws: Workspace) -> None:
    ws.write("src/a.py", "def f():\n    return 1\n")
    item = ws.item({"source_absent": [{"path": "src", "patterns": [r"breakpoint\(\)", "print\\("]}]})
    assert item.passed and item.details == ["no forbidden pattern in 1 file(s)"]


def test_source_absent_reports_file_line_and_pattern(ws: Workspace) -> None:
    ws.write("src/a.py", "x = 1\nbreakpoint()\n")
    ws.write("src/pkg/b.py", "print('debug')\n")
    item = ws.item({"source_absent": [{"path": "src", "patterns": [r"breakpoint\(\)", r"print\("]}]})
    assert not item.passed
    assert item.details == [
        "2 forbidden match(es) in 2 file(s) checked",
        r"a.py:2: /breakpoint\(\)/: breakpoint()",
        r"pkg/b.py:1: /print\(/: print('debug')",
    ]


def test_source_absent_extensions_limit_the_files_read(ws: Workspace) -> None:
    ws.write("src/notes.md", "print(\n")
    ws.write("src/a.py", "ok\n")
    assert ws.item({"source_absent": [{"path": "src", "patterns": [r"print\("], "extensions": [".py"]}]}).passed
    assert not ws.item({"source_absent": [{"path": "src", "patterns": [r"print\("], "extensions": ["md"]}]}).passed


def test_source_absent_prunes_default_and_named_directories(ws: Workspace) -> None:
    ws.write("node_modules/x.js", "eval(\n")
    ws.write("generated/y.js", "eval(\n")
    ws.write("src/z.js", "ok\n")
    rule = {"path": ".", "patterns": [r"eval\("], "prune": ["generated"]}
    assert ws.item({"source_absent": [rule]}).passed
    del rule["prune"]
    assert ws.item({"source_absent": [rule]}).details[1].startswith("generated/y.js:1:")


def test_source_absent_scans_a_single_file_and_skips_binaries(ws: Workspace) -> None:
    ws.write("a.py", "secret = 1\n")
    (ws.repos["app"] / "blob.bin").write_bytes(b"\0secret")
    assert not ws.item({"source_absent": [{"path": "a.py", "patterns": ["secret"]}]}).passed
    assert ws.item({"source_absent": [{"path": "blob.bin", "patterns": ["secret"]}]}).passed


def test_source_absent_fails_when_the_path_is_missing(ws: Workspace) -> None:
    item = ws.item({"source_absent": [{"path": "src", "patterns": ["x"]}]})
    assert not item.passed and item.details[0].startswith("source path is missing")


def test_source_absent_caps_listed_findings(ws: Workspace) -> None:
    ws.write("a.txt", "bad\n" * 100)
    item = ws.item({"source_absent": [{"path": "a.txt", "patterns": ["bad"]}]})
    assert len(item.details) == 41 and item.details[-1] == "... 61 lines omitted"
