"""The clean-tree precondition: a person's uncommitted changes are refused (naming the files) or set aside before
an Attempt, never swept into its commit; AWP's own saved partial work left after a failed commit is cleaned, so
a later prompt never commits it. Real git repositories, the real Attempt engine, the simulated agent."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from cleantree_support import _attempt, _git, _packet

from awp_pipelines.core.engine.cleantree import DirtyTree, ensure_clean
from awp_pipelines.core.packet.errors import PacketError
from awp_pipelines.core.packet.packet import load_packet
from awp_pipelines.core.packet.providers_config import load_catalog
from awp_pipelines.core.planning.plan import PlanContext, build_plan
from awp_pipelines.core.providers.base import ProviderOutcome, ProviderRequest
from awp_pipelines.core.providers.simulated import SimulatedProvider
from awp_pipelines.core.records.events import EventSink, read_events
from awp_pipelines.core.records.transcript import render_transcript


def _hand_edits(repo: Path) -> None:
    """What a person leaves: an unstaged edit, a staged new file, an untracked file."""
    (repo / "README.md").write_text("# my own line\n")
    (repo / "staged.txt").write_text("staged by hand\n")
    _git(repo, "add", "staged.txt")
    (repo / "notes.txt").write_text("untracked by hand\n")


def _committed_files(repo: Path, rev: str = "HEAD") -> set[str]:
    return set(_git(repo, "show", "--name-only", "--format=", rev).split())


def test_a_dirty_tree_is_refused_by_default_naming_the_files_and_left_as_it_was(tmp_path: Path,
                                                                                 make_git_repo: Any) -> None:
    packet, repo = _packet(tmp_path, make_git_repo)
    _hand_edits(repo)
    status = _git(repo, "status", "--porcelain")
    head = _git(repo, "rev-parse", "HEAD")
    record = _attempt(packet, "01", tmp_path)
    assert record.result == "dirty_tree" and record.failure is not None
    assert record.failure.failure_class == "dirty_tree" and not record.failure.retryable
    message = record.failure.message
    assert "work tree 'app'" in message and all(f in message for f in ("README.md", "staged.txt", "notes.txt"))
    assert "dirty_tree: set_aside" in message
    # The agent never ran: nothing written, nothing committed, the person's changes exactly as they were.
    assert not (repo / "a.txt").exists() and record.commits == []
    assert _git(repo, "rev-parse", "HEAD") == head and _git(repo, "status", "--porcelain") == status
    assert [t.state for t in record.transitions] == ["created", "provisioning", "terminal"]


def test_set_aside_stashes_the_hand_edits_and_the_agent_commit_holds_only_its_own_work(
        tmp_path: Path, make_git_repo: Any) -> None:
    packet, repo = _packet(tmp_path, make_git_repo, dirty_tree="set_aside")
    assert build_plan(packet, PlanContext(catalog=load_catalog(None))).dirty_tree == "set_aside"  # awp plan shows it
    _hand_edits(repo)
    record = _attempt(packet, "01", tmp_path)
    assert record.result == "completed"
    assert _committed_files(repo) == {"a.txt"}  # not README.md, staged.txt or notes.txt
    assert "my own line" not in _git(repo, "show", "HEAD")
    stash = record.set_aside["app"]
    assert _git(repo, "rev-parse", "refs/stash").strip() == stash
    assert "AWP set aside before Attempt pr-1.01.a1" in _git(repo, "stash", "list")
    transcript = render_transcript(read_events(tmp_path / "events-01.a1.jsonl"))  # what the UI shows
    assert f"`app`: changes found in the tree were set aside as git stash `{stash}`" in transcript
    _git(repo, "stash", "pop", "--index")  # the person gets everything back, staged as it was
    assert (repo / "README.md").read_text() == "# my own line\n"
    assert (repo / "notes.txt").read_text() == "untracked by hand\n"
    assert "A  staged.txt" in _git(repo, "status", "--porcelain")


class _LockAfterAgent:
    """The simulated agent, after which an index.lock appears (another git process, an editor): the commit fails."""

    def __init__(self, repo: Path) -> None:
        self.repo, self.inner = repo, SimulatedProvider()

    def run(self, request: ProviderRequest, sink: EventSink) -> ProviderOutcome:
        outcome = self.inner.run(request, sink)
        (self.repo / ".git" / "index.lock").write_text("")
        return outcome

    def resume(self, request: ProviderRequest, sink: EventSink) -> ProviderOutcome:
        return self.run(request, sink)


def test_after_a_commit_failure_a_later_prompt_commits_only_its_own_work(tmp_path: Path, make_git_repo: Any) -> None:
    packet, repo = _packet(tmp_path, make_git_repo)
    failed = _attempt(packet, "01", tmp_path, _LockAfterAgent(repo))
    assert failed.result == "commit_failed" and failed.wip.get("app")
    (repo / ".git" / "index.lock").unlink()  # the lock goes away; 01's files are still in the tree
    assert (repo / "a.txt").exists()
    later = _attempt(packet, "02", tmp_path)
    assert later.result == "completed", later.failure
    assert _committed_files(repo) == {"b.txt"}
    assert not (repo / "a.txt").exists()
    assert _git(repo, "show", f"{failed.wip['app']}:a.txt") == "a.txt\n"  # 01's work stays in its checkpoint


def test_an_index_lock_that_stays_refuses_the_next_attempt_with_gits_words(tmp_path: Path, make_git_repo: Any) -> None:
    packet, repo = _packet(tmp_path, make_git_repo)
    assert _attempt(packet, "01", tmp_path, _LockAfterAgent(repo)).result == "commit_failed"
    later = _attempt(packet, "02", tmp_path)
    assert later.result == "dirty_tree" and later.failure is not None
    assert "cannot be committed" in later.failure.message and "index.lock" in later.failure.message
    assert "b.txt" not in _git(repo, "log", "--all", "--name-only", "--format=")


def test_an_attempt_that_continued_a_checkpoint_and_failed_again_leaves_the_tree_clean(
        tmp_path: Path, make_git_repo: Any) -> None:
    """The restored work is in the new checkpoint: nothing of the AgentRun is left for another prompt to commit."""
    packet, repo = _packet(tmp_path, make_git_repo)
    first = _attempt(packet, "01", tmp_path, simulate={"writes": [{"path": "half.txt", "text": "half\n"}]})
    assert first.result == "verification_failed" and not (repo / "half.txt").exists()
    again = _attempt(packet, "01", tmp_path, number=2, restore=first.wip,
                     simulate={"writes": [{"path": "more.txt", "text": "more\n"}]})
    assert again.result == "verification_failed" and again.restored == first.wip
    assert _git(repo, "status", "--porcelain") == ""
    assert {"half.txt", "more.txt"} <= set(_git(repo, "ls-tree", "--name-only", again.wip["app"]).split())


def test_without_commits_the_tree_keeps_earlier_work_and_nothing_is_refused(tmp_path: Path,
                                                                            make_git_repo: Any) -> None:
    packet, repo = _packet(tmp_path, make_git_repo)
    (repo / "notes.txt").write_text("by hand\n")
    record = _attempt(packet, "01", tmp_path, commit=False)
    assert record.result == "completed" and record.commits == []
    assert (repo / "notes.txt").exists() and (repo / "a.txt").exists()


def test_a_bad_dirty_tree_value_is_an_error_with_its_line(tmp_path: Path, make_git_repo: Any) -> None:
    packet, _ = _packet(tmp_path, make_git_repo)
    manifest = packet.root / "packet.yaml"
    manifest.write_text(manifest.read_text() + "dirty_tree: sweep\n")
    try:
        load_packet(packet.root)
    except PacketError as err:
        assert "dirty_tree" in str(err) and "refuse" in str(err) and "set_aside" in str(err), str(err)
    else:
        raise AssertionError("dirty_tree: sweep was accepted")


def test_when_one_repo_cannot_be_set_aside_the_refusal_names_the_stashes_already_made(
        tmp_path: Path, make_git_repo: Any) -> None:
    first = make_git_repo(tmp_path / "first")
    (first / "notes.txt").write_text("by hand\n")
    empty = tmp_path / "empty"  # no commit yet: git cannot stash in it
    subprocess.run(["git", "init", "-q", str(empty)], check=True)
    (empty / "draft.txt").write_text("by hand\n")
    with pytest.raises(DirtyTree) as refused:
        ensure_clean({"first": first, "empty": empty}, "set_aside", "pr-1.01.a1")
    stash = _git(first, "rev-parse", "refs/stash").strip()
    message = str(refused.value)
    assert "work tree 'empty' holds changes no Attempt made: draft.txt" in message
    assert "without commits" in message and f"already set aside: 'first' as stash {stash[:12]}" in message


def test_a_stale_index_lock_is_refused_before_the_agent_starts(tmp_path: Path, make_git_repo: Any) -> None:
    packet, repo = _packet(tmp_path, make_git_repo)
    (repo / ".git" / "index.lock").write_text("")  # left by a git process that died
    head = _git(repo, "rev-parse", "HEAD")
    record = _attempt(packet, "01", tmp_path)
    assert record.result == "dirty_tree" and record.failure is not None
    assert "cannot be committed" in record.failure.message and "index.lock exists" in record.failure.message
    assert f"rm {(repo / '.git' / 'index.lock').resolve()}" in record.failure.message
    # No agent session was spent: nothing written, nothing committed.
    assert not (repo / "a.txt").exists() and record.commits == [] and _git(repo, "rev-parse", "HEAD") == head
    assert [t.state for t in record.transitions] == ["created", "provisioning", "terminal"]
