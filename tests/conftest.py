"""Shared fixtures. Keep this file small: a fixture used by one test module lives in that module."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

REPO_ROOT = Path(__file__).resolve().parent.parent


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"true", "1", "yes"}


@pytest.fixture(scope="session")
def pg_url() -> str:
    """SQLAlchemy URL of the test PostgreSQL server that tests/run_tests.sh starts (AWP_TEST_PG_URL)."""
    url = os.environ.get("AWP_TEST_PG_URL", "").strip()
    if not url:
        msg = "AWP_TEST_PG_URL is not set: run the tests with `make test` (bash tests/run_tests.sh)"
        if _in_ci():
            pytest.fail(f"{msg}; CI must run the PostgreSQL tests")
        pytest.skip(msg)
    return url


@pytest.fixture
def make_git_repo() -> Callable[[str | os.PathLike[str]], Path]:
    """Factory: make_git_repo(path) -> a real git repo at path (branch main, one commit adding README.md)."""

    def make(path: str | os.PathLike[str]) -> Path:
        repo = Path(path)
        repo.mkdir(parents=True, exist_ok=True)

        def git(*args: str) -> None:
            subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True)

        git("init", "--quiet", "--initial-branch=main")
        git("config", "user.name", "AWP Test")
        git("config", "user.email", "awp-test@example.invalid")
        git("config", "commit.gpgsign", "false")
        (repo / "README.md").write_text(f"# {repo.name}\n")
        git("add", "README.md")
        git("commit", "--quiet", "-m", "Add README")
        return repo

    return make


@pytest.fixture(scope="session")
def compat_root() -> Path:
    """The Prompt Runner compatibility packets: ../shared/compat/prompt_runner next to the repo."""
    root = REPO_ROOT.parent / "shared" / "compat" / "prompt_runner"
    if not root.is_dir():
        pytest.skip(f"compat packets not found at {root}")
    return root


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Own HOME, XDG/AWP config homes and DAGSTER_HOME per test: the developer's config is never read."""
    base = tmp_path_factory.mktemp("home")
    home = base / "home"
    for name, var in [
        ("home", "HOME"),
        ("xdg-config", "XDG_CONFIG_HOME"),
        ("awp-config", "AWP_CONFIG_HOME"),
        ("dagster-home", "DAGSTER_HOME"),
    ]:
        (base / name).mkdir()
        monkeypatch.setenv(var, str(base / name))
    for var in ("AWP_PROVIDER", "AWP_MODEL"):
        monkeypatch.delenv(var, raising=False)
    return home


@pytest.fixture
def fresh_pg_database(pg_url: str) -> Iterator[sa.URL]:
    """A database of its own on the test server, so concurrent tests never share Dagster's tables."""
    from e2e_support import fresh_database

    with fresh_database(pg_url) as db:
        yield db
