"""The browser-test harness, all real parts: the demo packet run into a PostgreSQL-backed Dagster home,
`dagster-webserver` serving that instance, Debian's chromium driven by playwright.

    dagster_ui   (session) the served UI: url, home, project, the demo's `awp run --json` output
    ui           (test)    (url, page): a fresh chromium profile per test
    shots        (test)    the test's screenshot folder, under its tmp_path

The webserver loads the repo's workspace.yaml (code location `awp_pipelines.orchestration.definitions`) with
AWP_PROJECT_ROOT at a temporary project whose assets/demo is the packet that ran, and DAGSTER_HOME holding
the repo's own dagster.yaml (PostgreSQL through AWP_PG_*), so the UI shows exactly what the deployment would.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from e2e_support import fresh_database
from first_run import demo_project
from ui_server import DagsterUi, free_port, stop_group, wait_for_server

REPO_ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]

def _environment(base: Path, home: Path, project: Path, db: sa.URL) -> dict[str, str]:
    """From scratch where it matters: own config homes, the test database, no developer overrides."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("AWP_PROVIDER", "AWP_MODEL", "AWP_PROVIDERS", "AWP_DAGSTER_HOME")}
    for var, name in (("HOME", "home"), ("XDG_CONFIG_HOME", "xdg"), ("AWP_CONFIG_HOME", "awp-config")):
        (base / name).mkdir(parents=True, exist_ok=True)
        env[var] = str(base / name)
    env.update(DAGSTER_HOME=str(home), AWP_PROJECT_ROOT=str(project), AWP_PG_USER=db.username or "",
               AWP_PG_PASSWORD=db.password or "", AWP_PG_HOST=db.host or "", AWP_PG_DB=db.database or "",
               AWP_PG_PORT=str(db.port or 5432))
    return env


@contextmanager
def _served(db: sa.URL, base: Path, demo_runs: int = 1) -> Iterator[DagsterUi]:
    """`demo_runs` demo packet runs (`awp run`, each a new packet run) stored in `db`, then the webserver."""
    if not CHROMIUM.exists():
        msg = "Debian chromium is missing: bash tests/ui/install_browser.sh"
        if os.environ.get("CI", "").strip().lower() in {"true", "1", "yes"}:
            pytest.fail(f"{msg}; CI must run the browser tests")
        pytest.skip(msg)
    home = base / "dagster-home"
    home.mkdir()
    shutil.copy(REPO_ROOT / "dagster.yaml", home / "dagster.yaml")
    (home / ".nux").mkdir()
    (home / ".nux" / "nux.yaml").write_text("seen: 1\n")  # no "Join the Dagster community" modal
    project = demo_project(base)
    env = _environment(base, home, project, db)
    for _ in range(demo_runs):
        run = subprocess.run([str(BIN / "awp"), "run", str(project / "assets" / "demo"), "--instance", str(home),
                              "--providers", str(project / "resources" / "providers.yaml"), "--json"],
                             env=env, cwd=project, capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, f"demo run failed:\n{run.stdout}\n{run.stderr}"
    port = free_port()
    log = base / "webserver.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([str(BIN / "dagster-webserver"), "-w", str(REPO_ROOT / "workspace.yaml"),
                                 "-h", "127.0.0.1", "-p", str(port)], env=env, cwd=REPO_ROOT, stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_server(url, proc, log)
        yield DagsterUi(url=url, home=home, project=project, run_output=json.loads(run.stdout))
    finally:
        stop_group(proc)


@pytest.fixture(scope="session")
def dagster_ui(session_pg_database: sa.URL, tmp_path_factory: pytest.TempPathFactory) -> Iterator[DagsterUi]:
    """The demo run once: three runs (the selection, 02's repair, 03's retry)."""
    with _served(session_pg_database, tmp_path_factory.mktemp("dagster-ui")) as served:
        yield served


@pytest.fixture(scope="module")
def crowded_ui(pg_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[DagsterUi]:
    """The demo run four times, on a database of its own: nine runs, more than one screen of the Runs list."""
    with fresh_database(pg_url, "awp_runs") as db, _served(db, tmp_path_factory.mktemp("crowded-ui"), 4) as served:
        yield served


@pytest.fixture(scope="session")
def playwright_driver() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as driver:
        yield driver


@pytest.fixture
def browser_page(playwright_driver: Any, tmp_path: Path) -> Iterator[Any]:
    """A page in a fresh chromium profile, 1400x900; the browser closes after the test."""
    context = playwright_driver.chromium.launch_persistent_context(
        str(tmp_path / "chromium-profile"), executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_FLAGS,
        viewport={"width": 1400, "height": 900})
    context.set_default_timeout(30_000)
    try:
        yield context.pages[0] if context.pages else context.new_page()
    finally:
        context.close()


@pytest.fixture
def ui(dagster_ui: DagsterUi, browser_page: Any) -> tuple[str, Any]:
    """(url, page) of the demo's UI."""
    return dagster_ui.url, browser_page


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    """Where a test saves its screenshots: <the test's tmp_path>/screenshots."""
    return tmp_path / "screenshots"
