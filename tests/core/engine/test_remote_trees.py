"""Remote repos (remote.py) over a real bare repository: two clones stand for two hosts."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from pydantic import ValidationError

from awp_pipelines.core.engine.remote import RemoteTrees, run_branch
from awp_pipelines.core.packet.model.manifest import RepoSpec
from awp_pipelines.core.packet.packet import load_packet
from awp_pipelines.core.records.committer import CommitError


def _git(*args: str | Path) -> str:
    return subprocess.run(["git", *map(str, args)], check=True, capture_output=True, text=True).stdout


@pytest.mark.parametrize("repo", [{}, {"path": "w", "remote": {"url": "/r.git"}}], ids=["neither", "both"])
def test_a_repo_names_exactly_one_of_path_and_remote(repo: dict[str, object]) -> None:
    with pytest.raises(ValidationError, match="exactly one of `path`"):
        RepoSpec.model_validate(repo)


def test_a_remote_url_with_a_credential_is_refused() -> None:
    with pytest.raises(ValidationError, match="carries a credential"):
        RepoSpec.model_validate({"remote": {"url": "https://bot:ghp_secret@example.com/a/b.git"}})
    assert RepoSpec.model_validate({"remote": {"url": "https://example.com/a/b.git"}}).remote is not None


def _packet(root: Path, remote: Path) -> Path:
    root.mkdir()
    (root / "packet.yaml").write_text(f"name: travel\nrepos:\n  app: {{remote: {{url: '{remote}'}}}}\n")
    return root


@pytest.fixture
def remote(tmp_path: Path, make_git_repo: Callable[[Path], Path]) -> Path:
    bare = tmp_path / "remote.git"
    _git("clone", "--quiet", "--bare", make_git_repo(tmp_path / "seed"), bare)
    return bare


def _trees(packet: Path, host: Path, monkeypatch: pytest.MonkeyPatch) -> RemoteTrees:
    monkeypatch.setenv("AWP_WORK_ROOT", str(host))
    return RemoteTrees(load_packet(packet), "pr-1")


def _synced_host(packet: Path, host: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[RemoteTrees, Path]:
    """A host (a work root of its own) whose clone of the packet's repo stands on the run's branch."""
    trees = _trees(packet, host, monkeypatch)
    clone = host / "travel" / "app"
    trees.sync([clone])
    return trees, clone


def test_hosts_follow_the_packet_runs_branch_and_a_stale_host_cannot_push_over_it(
        tmp_path: Path, remote: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    packet = _packet(tmp_path / "p", remote)
    host_a = _trees(packet, tmp_path / "a", monkeypatch)
    clone_a = tmp_path / "a" / "travel" / "app"
    [base] = host_a.sync([clone_a]).values()
    branch = run_branch("travel", "pr-1")
    assert _git("-C", remote, "rev-parse", f"refs/heads/{branch}").strip() == base  # the base is pinned
    assert _git("-C", clone_a, "config", "remote.origin.partialclonefilter").strip() == "blob:none"
    host_b = _trees(packet, tmp_path / "b", monkeypatch)
    clone_b = tmp_path / "b" / "travel" / "app"
    host_b.sync([clone_b])
    # Host A commits and pushes; host B, synced before, is stale: its push is refused, never forced.
    (clone_a / "a.txt").write_text("a\n")
    _git("-C", clone_a, "add", "a.txt")
    _git("-C", clone_a, "commit", "-qm", "a")
    host_a.push_commits({"app": clone_a})
    (clone_b / "b.txt").write_text("b\n")
    _git("-C", clone_b, "add", "b.txt")
    _git("-C", clone_b, "commit", "-qm", "b")
    with pytest.raises(CommitError, match="push to the packet run's branch"):
        host_b.push_commits({"app": clone_b})
    # Synced again (as the next Attempt does, holding the tree's lease), host B stands on A's commit.
    [tip] = host_b.sync([clone_b]).values()
    assert tip == _git("-C", clone_a, "rev-parse", "HEAD").strip()
    assert not (clone_b / "b.txt").exists()


def test_a_checkpoint_pushed_by_one_host_is_fetched_by_the_next(
        tmp_path: Path, remote: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    packet = _packet(tmp_path / "p", remote)
    host_a, clone_a = _synced_host(packet, tmp_path / "a", monkeypatch)
    _git("-C", clone_a, "update-ref", "refs/awp/checkpoints/pr-1.01/pr-1.01.a1", "HEAD")
    assert host_a.push_checkpoints({"app": clone_a}, "pr-1.01") == []
    _, clone_b = _synced_host(packet, tmp_path / "b", monkeypatch)
    assert _git("-C", clone_b, "for-each-ref", "--format=%(refname)", "refs/awp/").split() == [
        "refs/awp/checkpoints/pr-1.01/pr-1.01.a1"]


def test_local_repos_are_left_alone(tmp_path: Path, make_git_repo: Callable[[Path], Path],
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "p"
    make_git_repo(root / "w")
    (root / "packet.yaml").write_text("name: home\nrepos:\n  app: {path: w}\n")
    trees = RemoteTrees(load_packet(root), "pr-1")
    assert trees.sync([root / "w"]) == {}
    assert _git("-C", root / "w", "rev-parse", "--abbrev-ref", "HEAD").strip() == "main"


def test_a_checkpoint_saved_on_a_host_after_its_attempt_died_is_pushed_by_the_next_sync(
        tmp_path: Path, remote: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    packet = _packet(tmp_path / "p", remote)
    host_a, clone_a = _synced_host(packet, tmp_path / "a", monkeypatch)
    # What reaper.save_unrecorded_work does for a dead Attempt: a local checkpoint ref, not pushed by anyone.
    _git("-C", clone_a, "update-ref", "refs/awp/checkpoints/pr-1.02/pr-1.02.a1", "HEAD")
    host_a.sync([clone_a])
    assert _git("-C", remote, "for-each-ref", "--format=%(refname)", "refs/awp/").split() == [
        "refs/awp/checkpoints/pr-1.02/pr-1.02.a1"]


@pytest.mark.parametrize("packet", ["travel", "my packet", "a..b", ".hidden", "x.lock", "end.", "ünï"])
def test_a_packet_runs_branch_is_a_valid_ref_whatever_the_packet_is_called(packet: str) -> None:
    branch = run_branch(packet, "pr-1a2b")
    assert branch.startswith("awp/") and branch.endswith("/pr-1a2b")
    subprocess.run(["git", "check-ref-format", f"refs/heads/{branch}"], check=True)
