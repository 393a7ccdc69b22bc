"""Inside the sandbox a work tree's `.git` is wholly read-only (issue 31): the agent reads its history and
writes its files, but can neither write, replace nor rename the git metadata AWP's git reads afterwards.
Real bubblewrap, real repositories; each attempt also run without the grant, to show it would land."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from awp_pipelines.core.isolation.bwrap import bwrap_argv, unavailable
from awp_pipelines.core.isolation.grants import Grants, PathGrant, git_metadata_grants

pytestmark = pytest.mark.skipif(unavailable() is not None, reason=f"no sandbox here: {unavailable()}")

ATTEMPTS = {  # what the agent tries, as shell; exit 0 means it landed
    "commondir": "echo /elsewhere > .git/commondir",
    "config": "echo '[core] fsmonitor = x' >> .git/config",
    "index_link": "rm -f .git/index && ln -s /tmp/x .git/index",
    "reflog_link": "rm -f .git/logs/HEAD && ln -s /tmp/x .git/logs/HEAD",
    "rename_git": "mv .git .git-aside && mkdir .git",
    "remove_git": "rm -rf .git && test ! -e .git",
    "hook": "echo 'touch /tmp/x' > .git/hooks/post-commit",
}


def _inside(tree: Path, script: str, grants: list[PathGrant]) -> subprocess.CompletedProcess[str]:
    argv = bwrap_argv(Grants(paths=[PathGrant(path=str(tree), mode="rw", why="work tree"), *grants]),
                      ["/bin/sh", "-c", script], cwd=tree)
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False, env={"PATH": "/usr/bin:/bin"})


@pytest.mark.parametrize("attempt", list(ATTEMPTS))
def test_the_git_metadata_cannot_be_changed_from_inside(make_git_repo: Any, tmp_path: Path, attempt: str) -> None:
    repo = make_git_repo(tmp_path / "app")
    done = _inside(repo, ATTEMPTS[attempt], git_metadata_grants(repo))
    assert done.returncode != 0, done.stderr
    assert (repo / ".git" / "HEAD").exists() and not (repo / ".git-aside").exists()
    assert not (repo / ".git" / "commondir").exists() and not (repo / ".git" / "index").is_symlink()
    # Without the grant the same attempt lands: the test tests the grant.
    plain = make_git_repo(tmp_path / "plain")
    assert _inside(plain, ATTEMPTS[attempt], []).returncode == 0


def test_the_agent_still_reads_history_and_writes_its_files(make_git_repo: Any, tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "app")
    done = _inside(repo, "echo work > work.txt && git log --oneline && git status --porcelain",
                   git_metadata_grants(repo))
    assert done.returncode == 0, done.stderr
    assert "Add README" in done.stdout and "?? work.txt" in done.stdout


def test_a_worktree_gitdir_file_and_its_git_dirs_are_read_only(make_git_repo: Any, tmp_path: Path) -> None:
    main = make_git_repo(tmp_path / "main")
    subprocess.run(["git", "-C", str(main), "worktree", "add", "-q", str(tmp_path / "wt"), "-b", "wt"], check=True)
    wt = tmp_path / "wt"
    grants = git_metadata_grants(wt)
    assert {g.path for g in grants} == {str(wt / ".git"), str(main / ".git" / "worktrees" / "wt"), str(main / ".git")}
    assert _inside(wt, "echo 'gitdir: /elsewhere' > .git", grants).returncode != 0
    assert _inside(wt, f"echo x > {main / '.git' / 'worktrees' / 'wt' / 'commondir'}", grants).returncode != 0
    done = _inside(wt, "git log --oneline -1", grants)
    assert done.returncode == 0 and "Add README" in done.stdout, done.stderr
