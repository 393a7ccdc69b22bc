"""Git helpers over real repositories: HEAD, changed paths, the checkpoint before an Attempt."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from workspace_support import MakeRepo, sh_git

from awp_pipelines.core.records.workspace import (
    WorkspaceError,
    changed_paths,
    changed_since,
    diff_stat,
    git,
    head,
    is_git_repo,
    snapshot,
)


def test_head_is_the_current_commit_and_none_before_the_first(make_git_repo: MakeRepo, tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "app")
    assert head(repo) == sh_git(repo, "rev-parse", "HEAD").strip()
    empty = tmp_path / "empty"
    empty.mkdir()
    sh_git(empty, "init", "--quiet")
    assert head(empty) is None


def test_head_outside_a_repository_raises_a_clear_error(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(WorkspaceError) as info:
        head(plain)
    assert str(plain) in str(info.value) and "not a git repository" in str(info.value)


def test_is_git_repo_means_the_top_of_a_work_tree(make_git_repo: MakeRepo, tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "app")
    (repo / "sub").mkdir()
    assert is_git_repo(repo)
    assert not is_git_repo(repo / "sub")
    assert not is_git_repo(tmp_path / "missing")
    assert not is_git_repo(tmp_path)


def test_changed_paths_lists_modified_staged_deleted_and_untracked_but_not_ignored(
        make_git_repo: MakeRepo, tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "app")
    assert changed_paths(repo) == []
    (repo / "README.md").write_text("changed\n")
    (repo / ".gitignore").write_text("*.log\n")
    (repo / "debug.log").write_text("ignored\n")
    (repo / "deep" / "dir").mkdir(parents=True)
    (repo / "deep" / "dir" / "new file.txt").write_text("untracked, with a space\n")
    (repo / "staged.txt").write_text("s\n")
    sh_git(repo, "add", "staged.txt")
    assert changed_paths(repo) == [".gitignore", "README.md", "deep/dir/new file.txt", "staged.txt"]


def test_a_staged_rename_reports_both_names(make_git_repo: MakeRepo, tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "app")
    sh_git(repo, "mv", "README.md", "DOCS.md")
    assert changed_paths(repo) == ["DOCS.md", "README.md"]


def test_git_ignores_a_surrounding_git_dir_variable(make_git_repo: MakeRepo, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_git_repo(tmp_path / "app")
    other = make_git_repo(tmp_path / "other")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    (repo / "x.txt").write_text("x\n")
    assert changed_paths(repo) == ["x.txt"]
    assert head(repo) != head(other)


def test_git_runs_only_network_commands_and_a_failure_carries_the_command_and_gits_stderr(
        make_git_repo: MakeRepo, tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "app")
    with pytest.raises(ValueError, match="only for the network"):
        git(repo, "status")
    with pytest.raises(WorkspaceError) as info:
        git(repo, "fetch", str(tmp_path / "no-such-remote"))
    err = info.value
    assert err.repo == repo and err.command[:2] == ["git", "fetch"]
    assert "no-such-remote" in err.detail


def test_snapshot_records_head_and_dirty_paths_per_repo(make_git_repo: MakeRepo, tmp_path: Path) -> None:
    app, lib = make_git_repo(tmp_path / "app"), make_git_repo(tmp_path / "lib")
    (lib / "wip.txt").write_text("w\n")
    snap = snapshot({"app": app, "lib": lib})
    assert snap["app"].head == head(app) and snap["app"].dirty_paths == () and not snap["app"].dirty
    assert snap["lib"].dirty_paths == ("wip.txt",) and snap["lib"].dirty


def test_changed_since_sees_edits_to_an_already_dirty_file_and_new_commits(
        make_git_repo: MakeRepo, tmp_path: Path) -> None:
    app, lib = make_git_repo(tmp_path / "app"), make_git_repo(tmp_path / "lib")
    (app / "wip.txt").write_text("before\n")
    before = snapshot({"app": app, "lib": lib})
    assert changed_since(before, snapshot({"app": app, "lib": lib})) == []
    (app / "wip.txt").write_text("after\n")  # same dirty path, different content
    assert changed_since(before, snapshot({"app": app, "lib": lib})) == ["app"]
    sh_git(lib, "commit", "--quiet", "--allow-empty", "-m", "agent commit")
    assert changed_since(before, snapshot({"app": app, "lib": lib})) == ["app", "lib"]


def test_snapshot_works_in_a_repository_without_commits(tmp_path: Path) -> None:
    repo = tmp_path / "fresh"
    repo.mkdir()
    sh_git(repo, "init", "--quiet")
    before = snapshot({"fresh": repo})
    assert before["fresh"].head is None and before["fresh"].dirty_paths == ()
    (repo / "a.txt").write_text("a\n")
    after = snapshot({"fresh": repo})
    assert after["fresh"].dirty_paths == ("a.txt",)
    assert changed_since(before, after) == ["fresh"]


def test_diff_stat_counts_lines_per_file_since_the_checkpoint_commits_and_work_tree_alike(
        make_git_repo: MakeRepo, tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "r")
    base = head(repo)
    (repo / "README.md").write_text("# r\nmore\nlines\n")
    (repo / "gone.txt").write_text("x\n")
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo), "commit", "-qm", "agent commit"], check=True)
    (repo / "gone.txt").unlink()  # committed after the checkpoint, then removed: no net change
    (repo / "new.md").write_text("a\nb\n")
    (repo / "blob.bin").write_bytes(b"\0\1\2")
    assert diff_stat(repo, base) == [
        {"path": "README.md", "status": "M", "added": 2, "removed": 0},
        {"path": "blob.bin", "status": "A", "added": None, "removed": None},
        {"path": "new.md", "status": "A", "added": 2, "removed": 0},
    ]
    assert diff_stat(repo, head(repo)) == [
        {"path": "blob.bin", "status": "A", "added": None, "removed": None},
        {"path": "gone.txt", "status": "D", "added": 0, "removed": 1},
        {"path": "new.md", "status": "A", "added": 2, "removed": 0},
    ]


def test_diff_stat_in_a_repository_without_commits_counts_from_nothing(tmp_path: Path) -> None:
    repo = tmp_path / "empty"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "a.txt").write_text("1\n2\n3\n")
    assert diff_stat(repo, None) == [{"path": "a.txt", "status": "A", "added": 3, "removed": 0}]


def test_awps_git_on_a_tree_starts_no_process_and_the_identity_falls_back_per_key(
        make_git_repo: MakeRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Snapshot, checkpoint, commit, diff and reset go through libgit2: no program is started for any of them
    (the old runner started one git per step). The identity: the fallback only for what the config leaves
    unset."""
    from awp_pipelines.core.records import workspace
    from awp_pipelines.core.records.committer import commit_targets
    from awp_pipelines.core.records.diffs import repo_files

    repo = make_git_repo(tmp_path / "app")
    base = head(repo)
    started: list[object] = []
    quiet = monkeypatch.context()
    patched = quiet.__enter__()
    patched.setattr(subprocess, "run", lambda *a, **k: started.append(a))
    patched.setattr(subprocess, "Popen", lambda *a, **k: started.append(a))
    (repo / "new.txt").write_text("n\n")
    state = snapshot({"app": repo})["app"]
    assert state.head == base and state.dirty_paths == ("new.txt",)
    assert workspace.save_checkpoint(repo, base, "refs/awp/checkpoints/r/r.a1", "cp")
    assert diff_stat(repo, base)[0]["path"] == "new.txt"
    [sha] = [r.sha for r in commit_targets({"app": repo}, "feat: work", {"AWP-Attempt": "r.a1"}).values()]
    assert [f.path for f in repo_files("app", repo, base, str(sha), str)] == ["new.txt"]
    (repo / "stray.txt").write_text("s\n")
    workspace.discard_changes(repo)
    assert started == [] and not (repo / "stray.txt").exists()
    quiet.__exit__(None, None, None)
    sh_git(repo, "config", "user.name", "Someone")
    sh_git(repo, "config", "user.email", "")  # set empty: unset for a commit
    who = workspace.identity(workspace.open_repo(repo))
    assert (who.name, who.email) == ("Someone", "awp@localhost")
