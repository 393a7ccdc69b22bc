"""The Attempt engine on work an agent prepared against AWP (issue 31): git metadata tampered with during the
session ends the Attempt `tree_tampered`, naming the paths, with nothing committed, checkpointed or reset; work
holding a secret AWP knows is never committed nor checkpointed (`secret_in_work`, file and line). Real git
repositories, the real engine, the simulated agent followed by the attack."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cleantree_support import _attempt, _git, _packet

from awp_pipelines.core.providers.base import ProviderOutcome, ProviderRequest
from awp_pipelines.core.providers.simulated import SimulatedProvider
from awp_pipelines.core.records.events import EventSink
from awp_pipelines.core.records.git_tamper import git_metadata, tampered


class _ThenAttack:
    """The simulated agent, then `attack(repo)`: what an agent's session does to the tree before it ends."""

    def __init__(self, repo: Path, attack: Callable[[Path], None]) -> None:
        self.repo, self.attack, self.inner = repo, attack, SimulatedProvider()

    def run(self, request: ProviderRequest, sink: EventSink) -> ProviderOutcome:
        outcome = self.inner.run(request, sink)
        self.attack(self.repo)
        return outcome

    def resume(self, request: ProviderRequest, sink: EventSink) -> ProviderOutcome:
        return self.run(request, sink)


def _commondir(repo: Path) -> None:
    (repo / ".git" / "commondir").write_text(f"{repo.parent / 'second' / '.git'}\n")


def _fsmonitor(repo: Path) -> None:
    with (repo / ".git" / "config").open("a") as config:
        config.write(f'[core]\n\tfsmonitor = "touch {repo.parent / "ran"}; false"\n')


def _index_link(repo: Path) -> None:
    (repo / ".git" / "index").unlink()
    (repo / ".git" / "index").symlink_to(repo.parent / "outside-index")


def _reflog_link(repo: Path) -> None:
    (repo / ".git" / "logs" / "HEAD").unlink()
    (repo / ".git" / "logs" / "HEAD").symlink_to(repo.parent / "outside-log")


def _new_git_dir(repo: Path) -> None:
    os.rename(repo / ".git", repo.parent / "aside.git")
    subprocess.run(["cp", "-a", str(repo.parent / "aside.git"), str(repo / ".git")], check=True)


def _hook(repo: Path) -> None:
    (repo / ".git" / "hooks" / "post-commit").write_text(f"#!/bin/sh\ntouch {repo.parent / 'ran'}\n")


ATTACKS = {".git/commondir": _commondir, ".git/config": _fsmonitor, ".git/index": _index_link,
           ".git/logs/HEAD": _reflog_link, ".git": _new_git_dir, ".git/hooks/post-commit": _hook}


@pytest.mark.parametrize("named", list(ATTACKS))
def test_git_metadata_changed_in_the_session_ends_the_attempt_tree_tampered_with_nothing_written(
        tmp_path: Path, make_git_repo: Any, named: str) -> None:
    packet, repo = _packet(tmp_path, make_git_repo)
    second = make_git_repo(tmp_path / "p" / "second")
    second_refs = _git(second, "for-each-ref")
    head = _git(repo, "rev-parse", "HEAD")
    record = _attempt(packet, "01", tmp_path, _ThenAttack(repo, ATTACKS[named]))
    assert record.result == "tree_tampered" and record.failure is not None
    assert record.failure.failure_class == "tree_tampered" and not record.failure.retryable
    assert named in record.failure.message.replace(str(repo) + "/", "")
    assert not record.commits and not record.wip and record.verifier is None
    assert (repo / "a.txt").exists()  # the work is as the agent left it: nothing reset
    assert _git(second, "for-each-ref") == second_refs
    parent = repo.parent
    assert not (parent / "ran").exists() and not (parent / "outside-index").exists()
    assert not (parent / "outside-log").exists()
    git_dir = repo / ".git" if named != ".git" else repo.parent / "aside.git"
    assert (git_dir / "refs" / "heads" / "main").read_text() == head  # the branch never moved (read as a file:
    # plain git would follow the commondir)


def test_an_honest_session_is_not_tampering(tmp_path: Path, make_git_repo: Any) -> None:
    packet, repo = _packet(tmp_path, make_git_repo)
    before = git_metadata(repo)
    record = _attempt(packet, "01", tmp_path)
    assert record.result == "completed" and record.commits[0].status == "committed"
    assert tampered({"app": before}, {"app": git_metadata(repo)}) == {}  # AWP's own commit is no tampering


def test_a_worktree_gitdir_file_pointed_elsewhere_is_tampering(tmp_path: Path, make_git_repo: Any) -> None:
    main = make_git_repo(tmp_path / "main")
    _git(main, "worktree", "add", "-q", str(tmp_path / "wt"), "-b", "wt")
    before = git_metadata(tmp_path / "wt")
    other = make_git_repo(tmp_path / "other")
    (tmp_path / "wt" / ".git").write_text(f"gitdir: {other / '.git'}\n")
    assert str(tmp_path / "wt" / ".git") in tampered({"wt": before}, {"wt": git_metadata(tmp_path / "wt")})["wt"]


def _with_key(text: str) -> dict[str, Any]:
    return {"writes": [{"path": "a.txt", "text": text}]}


def test_a_credential_the_agent_writes_into_its_work_is_never_committed(
        tmp_path: Path, make_git_repo: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWP_PG_PASSWORD", "canary-runner-only-7f3e")  # the runner's secret-named variable
    packet, repo = _packet(tmp_path, make_git_repo)
    head = _git(repo, "rev-parse", "HEAD")
    record = _attempt(packet, "01", tmp_path, simulate=_with_key("ok\nDB=canary-runner-only-7f3e\n"))
    assert record.result == "secret_in_work" and record.failure is not None
    assert "a.txt line 2" in record.failure.message and "canary-runner-only" not in record.failure.message
    assert _git(repo, "rev-parse", "HEAD") == head and not record.commits
    assert "canary-runner-only" not in _git(repo, "log", "--all", "-p")
    assert (repo / "a.txt").exists()  # left for a person to see, never discarded


def test_a_failed_attempts_partial_work_holding_a_credential_is_not_checkpointed(
        tmp_path: Path, make_git_repo: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SERVICE_TOKEN", "canary-token-9a8b7c6d")
    packet, repo = _packet(tmp_path, make_git_repo)
    # The contract wants a.txt; the agent writes only the key elsewhere: verification fails, work is partial.
    steps = {"writes": [{"path": "notes.txt", "text": "token canary-token-9a8b7c6d\n"}]}
    record = _attempt(packet, "01", tmp_path, simulate=steps)
    assert record.result == "secret_in_work" and not record.wip
    assert "notes.txt line 1" in (record.failure.message if record.failure else "")
    assert "canary-token" not in _git(repo, "log", "--all", "-p")


def test_honest_work_with_a_runner_secret_elsewhere_is_committed(
        tmp_path: Path, make_git_repo: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWP_PG_PASSWORD", "canary-runner-only-7f3e")
    packet, repo = _packet(tmp_path, make_git_repo)
    record = _attempt(packet, "01", tmp_path)
    assert record.result == "completed" and record.commits[0].status == "committed"
