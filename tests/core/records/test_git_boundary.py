"""Issue 38's git boundary on real repositories: AWP's git (libgit2) on a tree the agent (or its verifier)
shaped. A nested repository runs nothing and is never a gitlink; what the git dir says (the index, MERGE_HEAD,
replace refs, grafts, a moved branch) decides nothing of AWP's commit; a reset writes nothing through a link;
the secret scan reads everything a commit stores, before anything is stored; a trailer without AWP's seal
proves nothing."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pytest
from workspace_support import MakeRepo, sh_git

from awp_pipelines.core.records.committer import CommitError, commit_targets
from awp_pipelines.core.records.work_tree_scan import UnsafeTree
from awp_pipelines.core.records.workspace import (
    changed_paths,
    commit_of_attempt,
    diff_stat,
    discard_changes,
    head,
    restore_checkpoint,
    save_checkpoint,
    worktree_digest,
)

TRAILERS = {"AWP-Attempt": "r.01.a1"}


def canary_config(git_dir: Path, marker: Path) -> None:
    """A config that runs a program on a status, a diff, an add or a commit: a clean filter for every file,
    an fsmonitor, hooks, a textconv, an external diff."""
    prog = f"sh -c 'echo ran >> {marker}; cat'"
    with (git_dir / "config").open("a") as config:
        config.write(f'[filter "evil"]\n\tclean = "{prog}"\n\tsmudge = "{prog}"\n\trequired = true\n'
                     f'[core]\n\tfsmonitor = "echo fsmonitor >> {marker}; false"\n\thooksPath = {git_dir / "h"}\n'
                     f'[diff "evil"]\n\ttextconv = "{prog}"\n\tcommand = "{prog}"\n[diff]\n\texternal = "{prog}"\n')
    (git_dir / "h").mkdir(exist_ok=True)
    for hook in ("pre-commit", "post-commit", "post-index-change", "reference-transaction"):
        (git_dir / "h" / hook).write_text(f"#!/bin/sh\necho {hook} >> {marker}\n")
        (git_dir / "h" / hook).chmod(0o755)


def test_a_nested_repository_runs_nothing_and_is_stored_as_files_never_as_a_gitlink(
        make_git_repo: MakeRepo, tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "app")
    marker = tmp_path / "ran"
    nested = make_git_repo(repo / "vendor" / "lib")
    (nested / ".gitattributes").write_text("* filter=evil diff=evil\n")
    canary_config(nested / ".git", marker)
    (nested / "code.py").write_text("x = 1\n")
    # Plain git runs the nested repository's program from the outer tree once the nested one is a gitlink.
    sh_git(nested, "add", "-A")
    assert marker.exists(), "the attack does not work on plain git"
    marker.unlink()
    base = head(repo)
    paths = changed_paths(repo)
    worktree_digest(repo)
    diff_stat(repo, base)
    [result] = commit_targets({"app": repo}, "feat: vendored", TRAILERS).values()
    assert not marker.exists(), marker.read_text()
    assert "vendor/lib/code.py" in paths and not any(".git/" in p for p in paths)
    listing = [line.split(None, 3) for line in sh_git(repo, "ls-tree", "-r", "HEAD").splitlines()]
    assert {mode for mode, _, _, _ in listing} == {"100644"}  # no gitlink (160000)
    assert "vendor/lib/code.py" in {path for *_, path in listing}
    assert not any(path.startswith("vendor/lib/.git/") for *_, path in listing)
    assert any("vendor/lib/.git" in why for why in result.skipped)
    assert sh_git(repo, "status", "--porcelain", "--ignore-submodules=all") == ""  # the index follows the commit


def test_an_operators_submodule_stays_the_gitlink_the_base_records(make_git_repo: MakeRepo, tmp_path: Path) -> None:
    sub = make_git_repo(tmp_path / "sub")
    repo = make_git_repo(tmp_path / "app")
    subprocess.run(["git", "-c", "protocol.file.allow=always", "-C", str(repo), "submodule", "add", "-q", str(sub),
                    "sub"], check=True, capture_output=True)
    sh_git(repo, "commit", "-qm", "add submodule")
    pinned = sh_git(repo, "ls-tree", "HEAD", "sub").split()[2]
    (repo / "sub" / "agent.txt").write_text("inside the submodule\n")
    (repo / "top.txt").write_text("t\n")
    commit_targets({"app": repo}, "feat: top", TRAILERS)
    assert sh_git(repo, "ls-tree", "HEAD", "sub").split()[:3] == ["160000", "commit", pinned]
    assert "sub/agent.txt" not in sh_git(repo, "ls-tree", "-r", "--name-only", "HEAD")


def test_merge_head_a_staged_gitlink_replace_refs_and_grafts_change_nothing_of_the_commit(
        make_git_repo: MakeRepo, tmp_path: Path) -> None:
    """What a verifier could write into `.git` before AWP's commit: the commit is the base plus the work,
    with the one parent AWP recorded."""
    repo = make_git_repo(tmp_path / "app")
    base = head(repo)
    assert base is not None
    sh_git(repo, "commit", "-q", "--allow-empty", "-m", "forged: any author, any trailer\n\nAWP-Attempt: x.01.a9")
    forged = sh_git(repo, "rev-parse", "HEAD").strip()
    sh_git(repo, "reset", "-q", "--soft", base)
    (repo / ".git" / "MERGE_HEAD").write_text(forged + "\n")
    sh_git(repo, "replace", base, forged)
    (repo / ".git" / "info" / "grafts").write_text(f"{base} {forged}\n")
    sh_git(repo, "update-index", "--add", "--cacheinfo", f"160000,{forged},staged-nested")
    (repo / "work.txt").write_text("w\n")
    [result] = commit_targets({"app": repo}, "feat: work", TRAILERS, bases={"app": base}).values()
    commit = sh_git(repo, "--no-replace-objects", "cat-file", "-p", str(result.sha))
    assert [line for line in commit.splitlines() if line.startswith("parent")] == [f"parent {base}"]
    assert sh_git(repo, "--no-replace-objects", "ls-tree", "-r", "--name-only", str(result.sha)).split() == [
        "README.md", "work.txt"]


def test_a_branch_moved_since_the_session_started_ends_tree_tampered(make_git_repo: MakeRepo, tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "app")
    base = head(repo)
    sh_git(repo, "commit", "-q", "--allow-empty", "-m", "the verifier's own history")
    moved = head(repo)
    (repo / "work.txt").write_text("w\n")
    with pytest.raises(CommitError) as info:
        commit_targets({"app": repo}, "feat: work", TRAILERS, bases={"app": base})
    assert info.value.failure_class == "tree_tampered" and "main" in info.value.message
    assert head(repo) == moved


def test_a_reset_writes_nothing_through_a_linked_folder_or_file_and_removes_links_not_their_targets(
        make_git_repo: MakeRepo, tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "app")
    (repo / "src").mkdir()
    (repo / "src" / "a.py").write_text("tracked\n")
    (repo / "notes.txt").write_text("tracked\n")
    sh_git(repo, "add", "-A")
    sh_git(repo, "commit", "-qm", "src")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("the operator's\n")
    precious = tmp_path / "precious.txt"
    precious.write_text("the operator's\n")
    for place in (repo / "src", repo / "notes.txt"):
        subprocess.run(["rm", "-rf", str(place)], check=True)
    (repo / "src").symlink_to(outside)  # a tracked folder replaced by a link out of the tree
    (repo / "notes.txt").symlink_to(precious)  # a tracked file replaced by a link to a file of the operator's
    (repo / "out-link").symlink_to(outside)  # an untracked link to a folder
    discard_changes(repo)
    assert sorted(os.listdir(outside)) == ["keep.txt"] and precious.read_text() == "the operator's\n"
    assert not (repo / "src").is_symlink() and (repo / "src" / "a.py").read_text() == "tracked\n"
    assert not (repo / "notes.txt").is_symlink() and (repo / "notes.txt").read_text() == "tracked\n"
    assert not os.path.lexists(repo / "out-link")
    assert sh_git(repo, "status", "--porcelain") == ""


def test_a_checkpoint_replayed_into_a_linked_folder_writes_nothing_outside(make_git_repo: MakeRepo,
                                                                            tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "app")
    base = head(repo)
    (repo / "src").mkdir()
    (repo / "src" / "wip.py").write_text("partial\n")
    sha = save_checkpoint(repo, base, "refs/awp/checkpoints/r/r.01.a1", "cp")
    assert sha is not None
    discard_changes(repo)
    outside = tmp_path / "outside"
    outside.mkdir()
    (repo / "src").symlink_to(outside)
    sh_git(repo, "add", "src")  # a person (or a verifier) made it part of HEAD
    sh_git(repo, "commit", "-qm", "link")
    assert restore_checkpoint(repo, sha) is False or not os.listdir(outside)
    assert os.listdir(outside) == []


def test_a_secret_in_a_name_a_link_target_or_the_message_is_refused_and_no_object_is_stored(
        make_git_repo: MakeRepo, tmp_path: Path) -> None:
    secret = "tok-abcdef-123456"
    for shape in ("content", "name", "link", "message"):
        repo = make_git_repo(tmp_path / shape)
        objects = sorted(p.relative_to(repo) for p in (repo / ".git" / "objects").rglob("*") if p.is_file())
        (repo / "big.bin").write_bytes(os.urandom(3 << 19))  # several chunks: the secret is not in the first
        if shape == "content":
            with (repo / "big.bin").open("ab") as out:
                out.write(b"\n" + secret.encode())
        elif shape == "name":
            (repo / f"{secret}.txt").write_text("x\n")
        elif shape == "link":
            (repo / "ln").symlink_to(f"/nowhere/{secret}")
        if shape == "message":  # the message is redacted, then scanned: committed without the value
            commit_targets({"app": repo}, f"feat: {secret}", TRAILERS, _Redactor([secret]))  # type: ignore[arg-type]
            assert secret not in sh_git(repo, "log", "--all", "--format=%B") and "[REDACTED]" in sh_git(
                repo, "log", "-1", "--format=%s")
            continue
        with pytest.raises(CommitError) as info:
            commit_targets({"app": repo}, "feat", TRAILERS, _Redactor([secret]))  # type: ignore[arg-type]
        assert info.value.failure_class == "secret_in_work" and secret not in str(info.value)
        with pytest.raises(Exception, match="secret"):
            save_checkpoint(repo, head(repo), "refs/awp/checkpoints/r/r.01.a1", "cp", [secret])
        after = sorted(p.relative_to(repo) for p in (repo / ".git" / "objects").rglob("*") if p.is_file())
        assert after == objects, f"{shape}: an object reached the store"


class _Redactor:
    """The committer's view of a redactor: its literals, and a call that hides them."""

    def __init__(self, literals: list[str]) -> None:
        self.literals = tuple(literals)

    def __call__(self, text: str) -> str:
        for value in self.literals:
            text = text.replace(value, "[REDACTED]")
        return text


def test_a_fifo_gitignore_or_a_linked_one_is_refused_not_read(make_git_repo: MakeRepo, tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "app")
    (repo / "d").mkdir()
    os.mkfifo(repo / "d" / ".gitignore")  # libgit2 would block reading it
    with pytest.raises(UnsafeTree, match="d/.gitignore is not a regular file"):
        changed_paths(repo)
    os.unlink(repo / "d" / ".gitignore")
    (repo / ".gitattributes").symlink_to("/etc/passwd")
    with pytest.raises(UnsafeTree, match=".gitattributes is a link"):
        changed_paths(repo)


def test_special_files_are_skipped_and_reported_and_ignored_files_stay_untouched(
        make_git_repo: MakeRepo, tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "app")
    (repo / ".gitignore").write_text("*.log\nbuild/\n")
    sh_git(repo, "add", ".gitignore")
    sh_git(repo, "commit", "-qm", "ignore")
    os.mkfifo(repo / "pipe")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(repo / "sock"))
    (repo / "debug.log").write_text("ignored\n")
    (repo / "build").mkdir()
    (repo / "build" / "out.o").write_text("ignored\n")
    (repo / "run.sh").write_text("#!/bin/sh\n")
    (repo / "run.sh").chmod(0o755)
    [result] = commit_targets({"app": repo}, "feat", TRAILERS).values()
    server.close()
    assert sorted(result.skipped) == ["pipe (a FIFO: not stored)", "sock (a socket: not stored)"]
    listing = sh_git(repo, "ls-tree", "-r", "HEAD")
    assert "100755 blob" in listing and "run.sh" in listing and "debug.log" not in listing and "build" not in listing
    (repo / "stray.txt").write_text("s\n")
    discard_changes(repo)
    assert (repo / "debug.log").exists() and (repo / "build" / "out.o").exists() and not (repo / "stray.txt").exists()


def test_a_trailer_without_awps_seal_is_no_proof(make_git_repo: MakeRepo, tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "app")
    (repo / "a.txt").write_text("a\n")
    sh_git(repo, "add", "-A")
    sh_git(repo, "commit", "-qm", "forged\n\nAWP-Attempt: r.01.a1\nAWP-Seal: " + "0" * 64)
    assert commit_of_attempt(repo, "r.01.a1") is None
    (repo / "b.txt").write_text("b\n")
    [result] = commit_targets({"app": repo}, "feat", {"AWP-Attempt": "r.01.a2"}).values()
    assert commit_of_attempt(repo, "r.01.a2") == result.sha
    # The same message on another tree is not sealed: the seal covers the tree and the parents.
    message = sh_git(repo, "log", "-1", "--format=%B")
    (repo / "c.txt").write_text("c\n")
    sh_git(repo, "add", "-A")
    sh_git(repo, "commit", "-q", "-m", message.replace("r.01.a2", "r.01.a3"))
    assert commit_of_attempt(repo, "r.01.a3") is None


def test_where_no_seal_key_can_be_made_the_commit_is_made_unsealed_and_never_proof(
        make_git_repo: MakeRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWP_SEAL_KEY_FILE", str(tmp_path / "a-file" / "seal.key"))
    (tmp_path / "a-file").write_text("not a folder: nothing can be made under it\n")
    repo = make_git_repo(tmp_path / "app")
    (repo / "a.txt").write_text("a\n")
    [result] = commit_targets({"app": repo}, "feat", {"AWP-Attempt": "r.01.a1"}).values()
    assert result.status == "committed" and "AWP-Seal" not in sh_git(repo, "log", "-1", "--format=%B")
    assert commit_of_attempt(repo, "r.01.a1") is None


def test_libgit2_reads_no_global_config_and_honours_the_repositorys_own_ignore_rules(
        make_git_repo: MakeRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The operator's (or a planted) ~/.gitconfig and XDG config are not read: their excludes hide nothing and
    their identity is taken by AWP outright, never by libgit2; `.gitignore` and `info/exclude` still count."""
    home = tmp_path / "home"
    (home / ".config" / "git").mkdir(parents=True)
    (home / "global-excludes").write_text("*.txt\n")
    (home / ".gitconfig").write_text(f"[core]\n\texcludesFile = {home / 'global-excludes'}\n"
                                     "[user]\n\temail = operator@example.invalid\n")
    (home / ".config" / "git" / "ignore").write_text("*.md\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    repo = make_git_repo(tmp_path / "app")
    sh_git(repo, "config", "--unset", "user.email")
    (repo / ".git" / "info" / "exclude").write_text("*.tmp\n")
    for name in ("a.txt", "b.md", "c.tmp"):
        (repo / name).write_text("x\n")
    assert changed_paths(repo) == ["a.txt", "b.md"]
    [result] = commit_targets({"app": repo}, "feat", TRAILERS).values()
    assert sh_git(repo, "log", "-1", "--format=%ae").strip() == "operator@example.invalid"  # AWP read it itself
    assert sh_git(repo, "ls-tree", "--name-only", str(result.sha)).split() == ["README.md", "a.txt", "b.md"]
