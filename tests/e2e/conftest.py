"""Fixtures for end-to-end runs: compat packets copied to tmp_path with real git repositories."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

# Which repositories each compat packet expects before a run (from their setup scripts).
REPOS = {"multi_repo_packet": ["repos/alpha", "repos/beta"]}
DEFAULT_REPOS = ["workspace"]


@pytest.fixture
def compat_packet(compat_root: Path, tmp_path: Path, make_git_repo: Callable[[Path], Path]) -> Callable[[str], Path]:
    def copy(name: str) -> Path:
        target = tmp_path / name
        shutil.copytree(compat_root / name, target)
        for repo in REPOS.get(name, DEFAULT_REPOS):
            make_git_repo(target / repo)
        return target

    return copy
