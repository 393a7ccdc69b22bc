"""AWP's own git on a tree the agent prepared (issues 31 and 38): each attack's tree built in a real repository,
and AWP's git (libgit2) neither runs the agent's program, nor reads another repository, nor writes through a
link, nor blocks on what it reads; its commit is built from objects with the parent AWP recorded."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
from workspace_support import MakeRepo, sh_git

from awp_pipelines.core.records.committer import CommitError, commit_targets
from awp_pipelines.core.records.workspace import (
    LinkedGitFile,
    WorkspaceError,
    changed_paths,
    discard_changes,
    git_location,
    save_checkpoint,
    worktree_digest,
)


def evil_config(folder: Path, marker: Path) -> None:
    """A git config whose fsmonitor and hooks write `marker`: what the agent wants AWP's git to run."""
    hooks = folder / "evil-hooks"
    hooks.mkdir(parents=True, exist_ok=True)
    for name in ("pre-commit", "post-commit", "post-index-change", "reference-transaction"):
        (hooks / name).write_text(f"#!/bin/sh\necho {name} >> {marker}\n")
        (hooks / name).chmod(0o755)
    with (folder / "config").open("a") as config:
        config.write(f'[core]\n\tfsmonitor = "echo fsmonitor >> {marker}; false"\n\thooksPath = {hooks}\n')


@pytest.mark.parametrize("how", ["commondir", "own_config", "replaced_git_dir"])
def test_git_run_by_awp_never_runs_the_program_the_agent_put_in_git_metadata(
        make_git_repo: MakeRepo, tmp_path: Path, how: str) -> None:
    repo = make_git_repo(tmp_path / "app")
    marker = tmp_path / "ran"
    if how == "commondir":  # a commondir pointing at a copy of the git dir with the agent's config
        other = tmp_path / "agents-git"
        subprocess.run(["cp", "-a", str(repo / ".git"), str(other)], check=True)
        evil_config(other, marker)
        (repo / ".git" / "commondir").write_text(f"{other}\n")
    elif how == "own_config":
        evil_config(repo / ".git", marker)
    else:  # `.git` moved aside and a new one made with the agent's config
        os.rename(repo / ".git", tmp_path / "aside.git")
        subprocess.run(["cp", "-a", str(tmp_path / "aside.git"), str(repo / ".git")], check=True)
        evil_config(repo / ".git", marker)
    # The same tree drives plain git to run it: the attack is real.
    subprocess.run(["git", "status"], cwd=repo, capture_output=True, check=False)
    assert marker.exists(), "the attack did not work on plain git"
    marker.unlink()
    (repo / "work.txt").write_text("w\n")
    if how == "commondir":  # refused outright: git's refs follow a commondir whatever GIT_COMMON_DIR says
        with pytest.raises(WorkspaceError, match="commondir"):
            changed_paths(repo)
        with pytest.raises(CommitError, match="commondir"):
            commit_targets({"app": repo}, "feat: work", {"AWP-Attempt": "a1"})
    else:
        assert changed_paths(repo) == ["work.txt"]
        save_checkpoint(repo, sh_git(repo, "rev-parse", "HEAD").strip(), "refs/awp/checkpoints/x/a1", "cp")
        commit_targets({"app": repo}, "feat: work", {"AWP-Attempt": "a1"})
    assert not marker.exists(), marker.read_text()


def test_a_commondir_to_another_repository_on_the_host_is_never_read_nor_written(
        make_git_repo: MakeRepo, tmp_path: Path) -> None:
    repo, other = make_git_repo(tmp_path / "app"), make_git_repo(tmp_path / "second")
    (other / "secret.txt").write_text("the other repo's file\n")
    sh_git(other, "add", "-A")
    sh_git(other, "commit", "-qm", "other's work")
    refs_before = sh_git(other, "for-each-ref")
    (repo / ".git" / "commondir").write_text(f"{other / '.git'}\n")
    (repo / "work.txt").write_text("w\n")
    for act in (lambda: save_checkpoint(repo, None, "refs/awp/checkpoints/x/a1", "cp"),
                lambda: commit_targets({"app": repo}, "feat: work", {"AWP-Attempt": "a1"}),
                lambda: discard_changes(repo)):
        with pytest.raises((WorkspaceError, CommitError)):
            act()
    assert sh_git(other, "for-each-ref") == refs_before
    assert sh_git(other, "log", "-1", "--format=%s").strip() == "other's work"
    assert (other / "secret.txt").exists() and not (repo / "secret.txt").exists()


def test_a_link_for_the_git_dir_is_refused_not_followed(make_git_repo: MakeRepo, tmp_path: Path) -> None:
    repo, other = make_git_repo(tmp_path / "app"), make_git_repo(tmp_path / "second")
    os.rename(repo / ".git", tmp_path / "aside.git")
    (repo / ".git").symlink_to(other / ".git")
    with pytest.raises(WorkspaceError, match="does not follow"):
        changed_paths(repo)


def test_a_worktree_git_file_names_its_git_dir_and_common_dir(make_git_repo: MakeRepo, tmp_path: Path) -> None:
    main = make_git_repo(tmp_path / "main")
    sh_git(main, "worktree", "add", "-q", str(tmp_path / "wt"), "-b", "wt")
    where = git_location(tmp_path / "wt")
    assert where["GIT_COMMON_DIR"] == str(main / ".git")
    assert where["GIT_DIR"] == str(main / ".git" / "worktrees" / "wt")
    (tmp_path / "wt" / "x.txt").write_text("x\n")
    assert changed_paths(tmp_path / "wt") == ["x.txt"]


@pytest.mark.parametrize("link", ["index", "logs/HEAD"])
def test_a_commit_never_writes_through_a_git_file_replaced_by_a_link(
        make_git_repo: MakeRepo, tmp_path: Path, link: str) -> None:
    repo = make_git_repo(tmp_path / "app")
    outside = tmp_path / "outside" / "authorized_keys"
    outside.parent.mkdir()
    place = repo / ".git" / link
    place.unlink()
    place.symlink_to(outside)  # dangling: git would create it
    (repo / "work.txt").write_text("ssh-ed25519 AAAA agent@evil\n")
    with pytest.raises(CommitError, match=link):
        commit_targets({"app": repo}, "feat: work", {"AWP-Attempt": "a1"})
    with pytest.raises(LinkedGitFile):
        save_checkpoint(repo, None, "refs/awp/checkpoints/x/a1", "cp")
    assert not outside.exists()


def test_the_digest_reads_links_as_links_and_never_blocks(make_git_repo: MakeRepo, tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "app")
    os.mkfifo(tmp_path / "fifo")
    (repo / "zero").symlink_to("/dev/zero")
    (repo / "fifo-link").symlink_to(tmp_path / "fifo")
    (repo / "dir-link").symlink_to("/usr")
    (repo / "new\nline.txt").write_text("n\n")
    objects = sh_git(repo, "count-objects")
    started = time.monotonic()
    first = worktree_digest(repo)
    assert time.monotonic() - started < 10
    assert worktree_digest(repo) == first
    (repo / "zero").unlink()
    (repo / "zero").symlink_to("/dev/null")  # another target: another digest
    assert worktree_digest(repo) != first
    assert sh_git(repo, "count-objects") == objects  # the digest wrote nothing into git


def test_the_digest_sees_a_change_in_a_file_with_a_newline_in_its_name(
        make_git_repo: MakeRepo, tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "app")
    (repo / "a\nb.txt").write_text("1\n")
    first = worktree_digest(repo)
    (repo / "a\nb.txt").write_text("2\n")
    assert worktree_digest(repo) != first


def test_the_runners_git_variables_never_reach_awps_git(make_git_repo: MakeRepo, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    repo, other = make_git_repo(tmp_path / "app"), make_git_repo(tmp_path / "second")
    marker = tmp_path / "ran"
    global_config = tmp_path / "gitconfig"
    global_config.write_text(f'[core]\n\tfsmonitor = "echo x >> {marker}; false"\n')
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(global_config))
    (repo / "work.txt").write_text("w\n")
    assert changed_paths(repo) == ["work.txt"]
    assert not marker.exists()


def test_the_secret_scan_names_the_file_and_line_never_the_value_across_chunks() -> None:
    from awp_pipelines.core.records.secret_scan import SecretHit, SecretInWork, secret_values, secrets_in_bytes

    values = secret_values(["tok-123456"])
    text = b"x = 1\n" * 3 + b"key = 'tok-123456'\n"
    chunks = [text[:25], text[25:], b"again tok-12", b"3456\n"]  # the second one split across two chunks
    hits = secrets_in_bytes(chunks, values, "a.py")
    assert hits == [SecretHit("a.py", 4), SecretHit("a.py", 5)]
    message = str(SecretInWork("app", hits))
    assert "a.py line 4, a.py line 5" in message and "tok-123456" not in message


def test_the_runners_secret_named_variables_are_known_secrets() -> None:
    from awp_pipelines.core.records.redact import secret_named_values

    env = {"AWP_PG_PASSWORD": "canary-pg-1234", "GITHUB_TOKEN": "ghp_abcdefghij", "AWS_SECRET_ACCESS_KEY": "AbCd/EfGh1",
           "PATH": "/usr/bin:/bin", "API_KEY": "short", "HOME": "/root", "DEBUG": "verbose-logging-on",
           "TOKEN_FILE": "not-a-secret-name-x"}
    assert set(secret_named_values(env)) == {"canary-pg-1234", "ghp_abcdefghij", "AbCd/EfGh1"}


def test_a_secret_of_several_lines_is_found_by_its_lines() -> None:
    from awp_pipelines.core.records.secret_scan import SecretHit, secret_values, secrets_in_bytes

    key = "-----BEGIN KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU\n-----END KEY-----\n"
    found = secrets_in_bytes([b"-----BEGIN KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU\n"], secret_values([key]), "id")
    assert SecretHit("id", 2) in found
    assert secrets_in_bytes([b"-----END\n"], secret_values([key]), "x") == []  # short lines alone: no match
