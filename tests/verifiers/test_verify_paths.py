"""Entry forms, the packet alias, and paths that try to leave their repository."""

from __future__ import annotations

import os

import pytest
from verify_helpers import Workspace


def test_plain_path_resolves_in_the_default_repo(ws: Workspace) -> None:
    ws.write("hello.txt")
    item = ws.item({"files_exist": ["hello.txt"]})
    assert item.passed
    assert (item.repo, item.path, item.resolved_path) == ("app", "hello.txt", str(ws.repos["app"] / "hello.txt"))


def test_repo_prefixed_string_resolves_in_that_repo(ws: Workspace) -> None:
    ws.write("NOTES.md", repo="beta")
    assert ws.item({"files_exist": ["beta:NOTES.md"]}).repo == "beta"
    assert ws.item({"files_exist": ["beta:NOTES.md"]}).passed
    assert not ws.item({"files_exist": ["app:NOTES.md"]}).passed


def test_mapping_entry_resolves_in_its_repo(ws: Workspace) -> None:
    ws.write("NOTES.md", repo="beta")
    item = ws.item({"files_exist": [{"repo": "beta", "path": "NOTES.md"}]})
    assert item.passed and item.repo == "beta"
    assert not ws.item({"files_exist": [{"path": "NOTES.md"}]}).passed  # no repo: the default, app


def test_packet_alias_names_the_packet_folder(ws: Workspace) -> None:
    ws.write("docs/adr.md", repo="packet")
    assert ws.item({"files_exist": ["packet:docs/adr.md"]}).passed
    assert ws.item({"contains": [{"repo": "packet", "path": "docs/adr.md", "text": "x"}]}).passed


def test_packet_alias_wins_over_a_repo_named_packet(ws: Workspace) -> None:
    ws.write("only-in-packet.txt", repo="packet")
    item = ws.item({"files_exist": ["packet:only-in-packet.txt"]}, repos={**ws.repos, "packet": ws.repos["beta"]})
    assert item.passed


def test_without_a_default_repo_plain_paths_are_in_the_packet_folder(ws: Workspace) -> None:
    ws.write("manifest.txt", repo="packet")
    item = ws.item({"files_exist": ["manifest.txt"]}, default_repo=None)
    assert item.passed and item.repo == "packet"


def test_colon_in_a_file_name_is_a_path_when_the_prefix_is_not_a_repo(ws: Workspace) -> None:
    ws.write("notes:draft.md")
    item = ws.item({"files_exist": ["notes:draft.md"]})
    assert item.passed and (item.repo, item.path) == ("app", "notes:draft.md")


def test_unknown_repo_in_a_mapping_fails_naming_the_entry_and_the_known_repos(ws: Workspace) -> None:
    item = ws.item({"files_exist": [{"repo": "gamma", "path": "a.txt"}]})
    assert not item.passed and item.fault is None
    assert "'gamma:a.txt'" in item.details[0] and "app, beta, packet" in item.details[0]


ESCAPES = {
    "files_exist": lambda p: {"files_exist": [p]},
    "files_absent": lambda p: {"files_absent": [p]},
    "contains": lambda p: {"contains": [{"path": p, "text": "x"}]},
    "matches": lambda p: {"matches": [{"path": p, "pattern": "x"}]},
    "doc": lambda p: {"doc": [p]},
    "yaml": lambda p: {"yaml": [{"path": p}]},
    "json": lambda p: {"json": [{"path": p}]},
    "glob": lambda p: {"glob": [{"path": p}]},
    "source_absent": lambda p: {"source_absent": [{"path": p, "patterns": ["x"]}]},
}


@pytest.mark.parametrize("clause", sorted(ESCAPES))
def test_dotdot_out_of_the_repo_fails_naming_the_entry(ws: Workspace, clause: str) -> None:
    ws.write("secret.txt", "x\n", repo="packet")  # exists, so only the escape can fail the item
    item = ws.item(ESCAPES[clause]("../secret.txt"))
    assert not item.passed and item.fault is None
    assert item.details == ["entry '../secret.txt' escapes repo 'app' through '..'"]


@pytest.mark.parametrize("clause", sorted(ESCAPES))
def test_absolute_path_fails_naming_the_entry(ws: Workspace, clause: str) -> None:
    target = ws.write("abs.txt")
    item = ws.item(ESCAPES[clause](str(target)))
    assert not item.passed
    assert item.details[0].startswith(f"entry {str(target)!r} is an absolute path")


@pytest.mark.parametrize("clause", ["files_exist", "contains", "doc", "json", "source_absent"])
def test_symlink_resolving_outside_the_repo_fails(ws: Workspace, clause: str, tmp_path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("x\n")
    os.symlink(outside, ws.repos["app"] / "link.txt")
    item = ws.item(ESCAPES[clause]("link.txt"))
    assert not item.passed
    assert item.details[0].startswith("entry 'link.txt' escapes repo 'app' through a symlink")


def test_symlinked_directory_leading_outside_fails(ws: Workspace, tmp_path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "a.txt").write_text("x\n")
    os.symlink(tmp_path / "elsewhere", ws.repos["app"] / "vendor")
    assert "through a symlink" in ws.item({"files_exist": ["vendor/a.txt"]}).details[0]


def test_symlink_inside_the_repo_is_fine(ws: Workspace) -> None:
    ws.write("real.txt")
    os.symlink("real.txt", ws.repos["app"] / "alias.txt")
    assert ws.item({"files_exist": ["alias.txt"]}).passed


def test_dotdot_that_stays_inside_the_repo_is_fine(ws: Workspace) -> None:
    ws.write("docs/a.md")
    assert ws.item({"files_exist": ["src/../docs/a.md"]}).passed


def test_escape_through_the_repo_prefix_names_the_entry_as_written(ws: Workspace) -> None:
    item = ws.item({"files_exist": ["beta:../../x"]})
    assert item.details == ["entry 'beta:../../x' escapes repo 'beta' through '..'"]
