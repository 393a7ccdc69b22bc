"""Fixtures for end-to-end runs: compat packets copied to tmp_path with real git repositories."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import sqlalchemy as sa
import yaml
from click.testing import CliRunner, Result

from awp_pipelines.cli import cli

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


def awp(*args: str | Path) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def git_log(repo: Path) -> list[str]:
    """Full commit messages, newest first."""
    out = subprocess.run(["git", "-C", str(repo), "log", "--format=%B%x00"], check=True, capture_output=True,
                         text=True).stdout
    return [m.strip() for m in out.split("\x00") if m.strip()]


def git_status(repo: Path) -> str:
    return subprocess.run(["git", "-C", str(repo), "status", "--porcelain"], check=True, capture_output=True,
                          text=True).stdout


def write_overlay(path: Path, overlay: dict[str, object]) -> Path:
    path.write_text(yaml.safe_dump(overlay), encoding="utf-8")
    return path


def postgres_instance_dir(folder: Path, db: sa.URL) -> Path:
    """A Dagster home whose dagster.yaml stores everything in the given PostgreSQL database."""
    folder.mkdir(parents=True, exist_ok=True)
    config = {"storage": {"postgres": {"postgres_db": {
        "username": db.username, "password": db.password or "", "hostname": db.host, "db_name": db.database,
        "port": db.port or 5432, "scheme": "postgresql+psycopg2"}}}, "telemetry": {"enabled": False}}
    (folder / "dagster.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    return folder
