"""The committer on real repositories: one commit per changed target, trailers, never a push."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from awp_pipelines.core.records.committer import CommitError, CommitResult, commit_targets, with_trailers
from awp_pipelines.core.records.redact import REDACTED
from awp_pipelines.core.records.workspace import save_checkpoint

MakeRepo = Callable[[Path], Path]
TRAILERS = {"AWP-Packet": "demo", "AWP-Prompt": "01", "AWP-Agent-Run": "r1.01", "AWP-Attempt": "r1.01.a2",
            "AWP-Provider": "simulated", "AWP-Account": "none", "AWP-Model": "simulated-demo"}


def sh_git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def test_a_clean_repo_is_no_changes_and_gets_no_commit(make_git_repo: MakeRepo, tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "app")
    before = sh_git(repo, "rev-parse", "HEAD")
    nothing = CommitResult(repo="app", status="no_changes")
    assert commit_targets({"app": repo}, "feat: nothing", TRAILERS) == {"app": nothing}
    assert sh_git(repo, "rev-parse", "HEAD") == before


def test_changes_are_committed_whole_with_message_and_trailers(make_git_repo: MakeRepo, tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "app")
    (repo / "src").mkdir()
    (repo / "src" / "new.py").write_text("print('hi')\n")
    (repo / "README.md").unlink()
    result = commit_targets({"app": repo}, "feat: add new module\n\nBody line.", TRAILERS)["app"]
    assert result.status == "committed"
    assert result.sha == sh_git(repo, "rev-parse", "HEAD").strip()
    assert sh_git(repo, "status", "--porcelain") == ""  # untracked added, deletion recorded
    assert sh_git(repo, "show", "--name-status", "--format=", "HEAD").split() == ["D", "README.md", "A", "src/new.py"]
    body = sh_git(repo, "log", "-1", "--format=%B")
    assert body.startswith("feat: add new module\n\nBody line.\n\nAWP-Packet: demo\nAWP-Prompt: 01\n")
    parsed = sh_git(repo, "log", "-1", "--format=%(trailers:only,unfold)").strip().splitlines()
    assert parsed[:-1] == [f"{k}: {v}" for k, v in TRAILERS.items()] and parsed[-1].startswith("AWP-Seal: ")


def test_each_target_repo_is_committed_on_its_own(make_git_repo: MakeRepo, tmp_path: Path) -> None:
    app, lib = make_git_repo(tmp_path / "app"), make_git_repo(tmp_path / "lib")
    (lib / "lib.txt").write_text("l\n")
    results = commit_targets({"app": app, "lib": lib}, "feat: lib", TRAILERS)
    assert results["app"].status == "no_changes" and results["app"].sha is None
    assert results["lib"].status == "committed" and results["lib"].sha == sh_git(lib, "rev-parse", "HEAD").strip()


def test_markdown_headings_in_the_message_survive_even_with_strip_cleanup_configured(
        make_git_repo: MakeRepo, tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "app")
    sh_git(repo, "config", "commit.cleanup", "strip")  # would drop every line starting with '#'
    (repo / "a.txt").write_text("a\n")
    commit_targets({"app": repo}, "feat: docs\n\n# Mission\nkeep this", {})
    assert sh_git(repo, "log", "-1", "--format=%B").strip() == "feat: docs\n\n# Mission\nkeep this"


def test_trailer_values_are_single_line_and_redacted() -> None:
    key = "sk-ant-" + "Z" * 30
    text = with_trailers("feat: x", {"AWP-Model": "son\nnet  4", "AWP-Account": f"acct {key}", "AWP-Empty": ""})
    assert text == f"feat: x\n\nAWP-Model: son net 4\nAWP-Account: acct {REDACTED}\n"
    with pytest.raises(ValueError, match="trailer key"):
        with_trailers("feat: x", {"Bad Key": "v"})
    with pytest.raises(ValueError, match="empty"):
        with_trailers("  \n", {})


@pytest.fixture
def anon_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repo on a machine that configures no git identity, where git refuses to guess one."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "no-global-config"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for var in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "EMAIL"):
        monkeypatch.delenv(var, raising=False)
    repo = tmp_path / "anon"
    repo.mkdir()
    sh_git(repo, "init", "--quiet")
    sh_git(repo, "config", "user.useConfigOnly", "true")  # git would refuse to guess an identity
    sh_git(repo, "config", "commit.gpgsign", "false")
    return repo


def test_a_repo_without_identity_commits_as_awp_without_changing_its_config(anon_repo: Path) -> None:
    (anon_repo / "a.txt").write_text("a\n")
    result = commit_targets({"anon": anon_repo}, "feat: first", TRAILERS)["anon"]
    assert result.status == "committed"
    assert sh_git(anon_repo, "log", "-1", "--format=%an <%ae>|%cn <%ce>").strip() == (
        "AWP Pipelines <awp@localhost>|AWP Pipelines <awp@localhost>")
    assert "user.name" not in sh_git(anon_repo, "config", "--local", "--list")


def test_a_repo_without_identity_still_gets_its_checkpoint(anon_repo: Path) -> None:
    """A dead Attempt's work is saved as a checkpoint commit: on a worker with no git identity it was lost."""
    (anon_repo / "half.txt").write_text("half\n")
    sha = save_checkpoint(anon_repo, None, "refs/awp/checkpoints/ar/a1", "AWP checkpoint a1")
    assert sha is not None
    assert sh_git(anon_repo, "show", "-s", "--format=%an", sha).strip() == "AWP Pipelines"
    assert "user.name" not in sh_git(anon_repo, "config", "--local", "--list")


def test_a_configured_identity_is_kept(make_git_repo: MakeRepo, tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "app")
    (repo / "a.txt").write_text("a\n")
    commit_targets({"app": repo}, "feat: a", TRAILERS)
    assert sh_git(repo, "log", "-1", "--format=%an <%ae>").strip() == "AWP Test <awp-test@example.invalid>"


def test_a_rejected_commit_raises_with_gits_words_and_keeps_earlier_results(
        make_git_repo: MakeRepo, tmp_path: Path) -> None:
    app, lib = make_git_repo(tmp_path / "app"), make_git_repo(tmp_path / "lib")
    (lib / ".git" / "index.lock").write_text("")  # another git holds lib's index
    (app / "a.txt").write_text("a\n")
    (lib / "b.txt").write_text("b\n")
    with pytest.raises(CommitError) as info:
        commit_targets({"app": app, "lib": lib}, "feat: both", TRAILERS)
    err = info.value
    assert err.repo == "lib" and "index.lock" in err.message and "commit failed in lib" in str(err)
    assert err.results["app"].status == "committed"
    assert sh_git(lib, "log", "--format=%s") == "Add README\n"


def test_a_target_that_is_not_a_repository_is_a_commit_error(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(CommitError, match="not a git repository"):
        commit_targets({"plain": plain}, "feat: x", TRAILERS)


def test_committing_never_pushes(make_git_repo: MakeRepo, tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "app")
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "--quiet", "--bare", str(remote)], check=True)
    sh_git(repo, "remote", "add", "origin", str(remote))
    sh_git(repo, "push", "--quiet", "-u", "origin", "main")
    pushed = sh_git(remote, "rev-parse", "main")
    (repo / "a.txt").write_text("a\n")
    result = commit_targets({"app": repo}, "feat: local only", TRAILERS)["app"]
    assert result.status == "committed"
    assert sh_git(remote, "rev-parse", "main") == pushed
    assert sh_git(repo, "rev-list", "--count", "origin/main..main").strip() == "1"
