"""Fixtures of the reliability suite; the summary table's hooks are registered by tests/conftest.py."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from reliability.canaries import ENV
from reliability.crash import PG_SH
from reliability.summary import ROW_KEY, make_row


@pytest.fixture
def reliability_row(request: pytest.FixtureRequest) -> Callable[..., None]:
    """reliability_row(fault, tries=, survived=, records_lost=, ..., seconds=, note=): one row of the table."""

    def record(fault: str, **values: Any) -> None:
        request.node.user_properties.append((ROW_KEY, make_row(fault, **values)))

    return record


@pytest.fixture
def canaries(monkeypatch: pytest.MonkeyPatch) -> None:
    """The canary credentials (reliability/canaries.py) in the environment, where the catalog's accounts read them."""
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def home_folders(isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The folder of this test's HOME, XDG and AWP config homes, AWP_CACHE_HOME and DAGSTER_HOME
    (conftest.isolated_home), with the XDG cache, data and state homes there too: everything a command may
    write outside the packet is under it."""
    base = isolated_home.parent
    for name in ("CACHE", "DATA", "STATE"):
        (base / f"xdg-{name.lower()}").mkdir(exist_ok=True)
        monkeypatch.setenv(f"XDG_{name}_HOME", str(base / f"xdg-{name.lower()}"))
    return base


@pytest.fixture
def private_pg() -> Iterator[tuple[Path, sa.URL]]:
    """A PostgreSQL server of the test's own, to stop, crash or restore (`crash.pg_sh`), and its URL; under /tmp:
    the server's user must reach it."""
    folder = Path(tempfile.mkdtemp(prefix="awp-private-pg."))
    started = subprocess.run(["bash", str(PG_SH), "start", str(folder)], capture_output=True, text=True,
                             timeout=180)
    if started.returncode != 0:
        shutil.rmtree(folder, ignore_errors=True)
        pytest.fail(f"tests/pg.sh start failed: {started.stderr}")
    try:
        yield folder, sa.make_url(started.stdout.strip())
    finally:
        subprocess.run(["bash", str(PG_SH), "stop", str(folder)], capture_output=True, timeout=120)
        shutil.rmtree(folder, ignore_errors=True)
