"""A packet folder on disk with two real git repositories (`app`, the default, and `beta`)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from verify_helpers import Workspace, git_repo


@pytest.fixture(scope="session")
def packet_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Built once: git is slow to start many times, copying a finished packet is not."""
    root = tmp_path_factory.mktemp("template") / "packet"
    root.mkdir()
    (root / "prompt_runner_packet.md").write_text("---\nname: t\n---\n")
    git_repo(root / "workspace")
    git_repo(root / "repos" / "beta")
    return root


@pytest.fixture
def ws(tmp_path: Path, packet_template: Path) -> Workspace:
    root = tmp_path / "packet"
    shutil.copytree(packet_template, root, symlinks=True)
    return Workspace(root, {"app": root / "workspace", "beta": root / "repos" / "beta"})
