"""A person's uncommitted changes through a whole `awp run`: refused by default (the files named, nothing run),
set aside with `dirty_tree: set_aside`; either way the hand edit never reaches an agent commit, and `awp blame`
never attributes it to the agent."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import yaml
from e2e_support import awp

HAND_LINE = "a line a person wrote"


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


def _packet(root: Path, make_git_repo: Any, dirty_tree: str | None = None) -> tuple[Path, Path]:
    repo = make_git_repo(root / "workspace")
    manifest = {"name": "handwork", "provider": "simulated", "repos": {"app": {"path": "./workspace", "default": True}},
                **({"dirty_tree": dirty_tree} if dirty_tree else {})}
    (root / "packet.yaml").write_text(yaml.safe_dump(manifest))
    (root / "prompts").mkdir()
    front = {"id": "01", "commit": "docs: add notes", "verify": {"files_exist": ["NOTES.md"]},
             "simulate": {"attempts": [{"writes": [{"path": "NOTES.md", "text": "agent notes\n"}]}]}}
    (root / "prompts" / "01_notes.prompt.md").write_text(f"---\n{yaml.safe_dump(front)}---\nWrite NOTES.md.\n")
    return root, repo


def _hand_edit(repo: Path) -> None:
    with (repo / "README.md").open("a") as readme:
        readme.write(HAND_LINE + "\n")
    (repo / "draft.txt").write_text("untracked draft\n")


def _blame(path: str) -> dict:
    result = awp("blame", path, "--json")
    return json.loads(result.output)


def test_a_dirty_tree_is_refused_and_the_hand_edit_never_reaches_an_agent_commit(tmp_path: Path,
                                                                                make_git_repo) -> None:
    packet, repo = _packet(tmp_path / "refuse", make_git_repo)
    _hand_edit(repo)
    head = _git(repo, "rev-parse", "HEAD")
    result = awp("run", packet, "--json")
    assert result.exit_code == 1, result.output
    [outcome] = json.loads(result.output)["prompts"]
    assert outcome["result"] == "dirty_tree" and outcome["failure_class"] == "dirty_tree"
    assert "README.md" in outcome["message"] and "draft.txt" in outcome["message"]
    assert _git(repo, "rev-parse", "HEAD") == head and not (repo / "NOTES.md").exists()
    assert HAND_LINE in (repo / "README.md").read_text()  # the person's work is untouched

    # The person commits their edit; the next run completes and its commit holds only the agent's file.
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "my own edit")
    assert awp("run", packet).exit_code == 0
    assert set(_git(repo, "show", "--name-only", "--format=", "HEAD").split()) == {"NOTES.md"}
    hand = _blame(f"{repo / 'README.md'}:2")
    assert hand["by_awp"] is False and hand["lines"][0]["commit"]["summary"] == "my own edit"
    assert _blame(f"{repo / 'NOTES.md'}:1")["by_awp"] is True


def test_set_aside_stashes_the_hand_edit_and_blame_never_names_the_agent_for_it(tmp_path: Path,
                                                                               make_git_repo) -> None:
    packet, repo = _packet(tmp_path / "aside", make_git_repo, dirty_tree="set_aside")
    _hand_edit(repo)
    result = awp("run", packet)
    assert result.exit_code == 0, result.output
    agent_commit = _git(repo, "show", "--format=%B", "HEAD")
    assert "AWP-Attempt:" in agent_commit and HAND_LINE not in agent_commit
    assert set(_git(repo, "show", "--name-only", "--format=", "HEAD").split()) == {"NOTES.md"}
    assert "AWP set aside before Attempt" in _git(repo, "stash", "list")
    assert HAND_LINE not in (repo / "README.md").read_text() and not (repo / "draft.txt").exists()

    _git(repo, "stash", "pop")  # the person's work comes back on top of the agent's commit
    assert HAND_LINE in (repo / "README.md").read_text() and (repo / "draft.txt").exists()
    assert _blame(f"{repo / 'README.md'}:2")["by_awp"] is False  # not committed: no Attempt wrote it
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "my own edit")
    hand = _blame(f"{repo / 'README.md'}:2")
    assert hand["by_awp"] is False and hand["lines"][0]["commit"]["summary"] == "my own edit"
