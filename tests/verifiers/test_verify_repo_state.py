"""changed_paths_only and repos_clean: whole-repository state, one item per clause, real git repositories."""

from __future__ import annotations

import subprocess
from pathlib import Path

from verify_helpers import Workspace


def test_changed_paths_only_passes_when_only_allowed_paths_changed(ws: Workspace) -> None:
    ws.write("hello.txt")
    item = ws.item({"changed_paths_only": ["hello.txt"]})
    assert item.passed and item.kind == "changed_paths_only" and item.repo == "app"
    assert item.details == ["app: 1 changed path(s), all allowed"]


def test_changed_paths_only_fails_on_an_untracked_file_in_a_new_directory(ws: Workspace) -> None:
    ws.write("hello.txt")
    ws.write("scratch/notes/tmp.txt")
    item = ws.item({"changed_paths_only": ["hello.txt"]})
    assert not item.passed and item.fault is None
    assert item.details == ["app: 1 changed path(s) not allowed:", "  scratch/notes/tmp.txt"]


def test_changed_paths_only_sees_modified_staged_and_deleted_files(ws: Workspace) -> None:
    ws.write("a.txt")
    ws.git("app", "add", "a.txt")
    ws.git("app", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "a")
    ws.write("README.md", "changed\n")
    ws.write("staged.txt")
    ws.git("app", "add", "staged.txt")
    (ws.repos["app"] / "a.txt").unlink()
    item = ws.item({"changed_paths_only": ["hello.txt"]})
    assert item.details[1:] == ["  README.md", "  a.txt", "  staged.txt"]


def test_changed_paths_only_counts_both_sides_of_a_rename(ws: Workspace) -> None:
    ws.git("app", "mv", "README.md", "READ.md")
    assert not ws.item({"changed_paths_only": ["READ.md"]}).passed
    assert ws.item({"changed_paths_only": ["READ.md", "README.md"]}).passed


def test_changed_paths_only_directory_entry_allows_what_is_below_it(ws: Workspace) -> None:
    ws.write("docs/a.md")
    ws.write("docs/deep/b.md")
    assert ws.item({"changed_paths_only": ["docs/"]}).passed
    assert not ws.item({"changed_paths_only": ["docs"]}).passed  # without the slash: that exact path only


def test_changed_paths_only_checks_every_repo_its_entries_name(ws: Workspace) -> None:
    ws.write("NOTES.md")
    ws.write("NOTES.md", repo="beta")
    ws.write("stray.txt", repo="beta")
    item = ws.item(
        {"changed_paths_only": [{"repo": "app", "path": "NOTES.md"}, {"repo": "beta", "path": "NOTES.md"}]}
    )
    assert not item.passed and item.repo is None
    assert item.details == [
        "app: 1 changed path(s), all allowed",
        "beta: 1 changed path(s) not allowed:",
        "  stray.txt",
    ]


def test_changed_paths_only_fails_outside_a_git_repository(ws: Workspace) -> None:
    item = ws.item({"changed_paths_only": ["packet:x.txt"]})
    assert not item.passed and "not a git repository" in item.details[0]


def test_changed_paths_only_rejects_an_escaping_entry(ws: Workspace) -> None:
    item = ws.item({"changed_paths_only": ["../x"]})
    assert not item.passed and item.details[0] == "entry '../x' escapes repo 'app' through '..'"


def test_changed_paths_only_does_not_take_the_index_lock(ws: Workspace) -> None:
    ws.write("hello.txt")
    ws.item({"changed_paths_only": ["hello.txt"]})
    assert not (ws.repos["app"] / ".git" / "index.lock").exists()


def test_repos_clean_passes_on_a_clean_local_repo(ws: Workspace) -> None:
    item = ws.item({"repos_clean": {"repo": "app"}})
    assert item.passed and item.repo == "app"
    assert item.details[0].startswith("app: clean: main at ") and "local only, no upstream" in item.details[0]


def test_repos_clean_fails_on_uncommitted_work_and_lists_it(ws: Workspace) -> None:
    ws.write("a.txt")
    item = ws.item({"repos_clean": [{}]})  # no repo: the default
    assert not item.passed and item.details == ["app: uncommitted changes (1): a.txt"]


def test_repos_clean_is_one_item_for_several_repos(ws: Workspace) -> None:
    ws.write("b.txt", repo="beta")
    report = ws.verify({"repos_clean": ["app", "beta"]})
    (item,) = report.items
    assert not item.passed and item.repo is None
    assert item.details[0].startswith("app: clean") and item.details[1] == "beta: uncommitted changes (1): b.txt"


def test_repos_clean_unknown_repo_fails(ws: Workspace) -> None:
    assert "unknown repo" in ws.item({"repos_clean": "gamma"}).details[0]


def _with_remote(ws: Workspace, tmp_path: Path) -> Path:
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    ws.git("app", "remote", "add", "origin", str(remote))
    ws.git("app", "push", "-q", "-u", "origin", "main")
    return remote


def _commit(ws: Workspace, name: str) -> None:
    ws.write(name)
    ws.git("app", "add", name)
    ws.git("app", "commit", "-qm", name)


def test_repos_clean_pushed_requires_an_upstream(ws: Workspace) -> None:
    item = ws.item({"repos_clean": {"repo": "app", "pushed": True}})
    assert not item.passed and "no upstream for branch main" in item.details[0]


def test_repos_clean_pushed_passes_when_the_remote_has_head(ws: Workspace, tmp_path: Path) -> None:
    _with_remote(ws, tmp_path)
    item = ws.item({"repos_clean": {"repo": "app", "pushed": True}})
    assert item.passed, item.details
    assert item.details[0].endswith("(pushed to origin/main)")


def test_repos_clean_pushed_fails_on_a_local_commit(ws: Workspace, tmp_path: Path) -> None:
    _with_remote(ws, tmp_path)
    _commit(ws, "later.txt")
    item = ws.item({"repos_clean": {"repo": "app", "pushed": True}})
    assert not item.passed and "not pushed: main HEAD" in item.details[0]


def test_repos_clean_asks_the_remote_not_the_cached_ref(ws: Workspace, tmp_path: Path) -> None:
    remote = _with_remote(ws, tmp_path)
    # Someone else moves the remote branch; the cached origin/main still equals HEAD.
    other = tmp_path / "other"
    subprocess.run(["git", "clone", "-q", "-b", "main", str(remote), str(other)], check=True)
    (other / "x.txt").write_text("x")
    for args in (["add", "x.txt"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"], ["push", "-q"]):
        subprocess.run(["git", *args], cwd=other, check=True)
    assert not ws.item({"repos_clean": {"repo": "app", "pushed": True}}).passed
    cached = ws.item({"repos_clean": {"repo": "app", "pushed": True, "network": False}})
    assert cached.passed and "network: false" in cached.details[0]
    # Read-only: the remote query moved no remote-tracking ref.
    assert ws.git("app", "rev-parse", "origin/main") == ws.git("app", "rev-parse", "HEAD")


def test_repos_clean_unreachable_remote_falls_back_to_the_cached_ref(ws: Workspace, tmp_path: Path) -> None:
    remote = _with_remote(ws, tmp_path)
    remote.rename(tmp_path / "moved.git")
    item = ws.item({"repos_clean": {"repo": "app", "pushed": True}})
    assert item.passed and "git ls-remote failed" in item.details[0] and "cached remote-tracking ref" in item.details[0]


def test_git_clauses_run_after_every_command_and_only_once_the_tamper_check_passed(ws: Workspace) -> None:
    """Issue 38: a command (the agent's code) runs first; the git clauses read the repository only when the
    Attempt's guard finds its git metadata as before the session."""
    seen: list[str] = []
    ws.script("bin/mark", "echo ran > ran.txt")

    def guard() -> str | None:
        seen.append("guard:" + ("after" if (ws.repos["app"] / "ran.txt").exists() else "before"))
        return tampered

    contract = {"repos_clean": [{"repo": "app"}], "commands": [{"exec": "bin/mark"}]}
    tampered: str | None = "the git metadata changed: .git/config"
    report = ws.verify(contract, isolation="none", git_guard=guard)
    [clean] = [i for i in report.items if i.kind == "repos_clean"]
    assert seen == ["guard:after"]
    assert clean.fault == "verifier_fault" and "not read: the git metadata changed" in clean.details[0]
    tampered = None
    report = ws.verify(contract, isolation="none", git_guard=guard)
    assert [i for i in report.items if i.kind == "repos_clean"][0].fault is None
