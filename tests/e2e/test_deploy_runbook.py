"""docs/deploy.md's Celery runbook, executed: its fenced commands (the blocks marked `runbook:`) read from the
document and run as written, so the document and this test cannot drift. Two prefork Celery workers with
their own HOME, DAGSTER_HOME folder and work root, the webserver and the daemon, on a new PostgreSQL database
and a private Redis; then "Materialize all" from the lineage page (the UI's launch of `__ASSET_JOB`), and the
demo packet completes: 02 by its repair, 03 by its retry, launched by the recovery sensor; the repair's
`awp/page` link, read from its asset, opens its page on the runbook's `awp serve`."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import sqlalchemy as sa
from dagster import AssetKey, DagsterInstance
from e2e_support import decided_launch, runs_of_packet

from tests.daemon.deployment import Deployment, free_port, make_project, stop_groups, wait_for_webserver
from tests.e2e.test_celery_runs import _redis

REPO_ROOT = Path(__file__).resolve().parents[2]
RUNBOOK = REPO_ROOT / "docs" / "deploy.md"
BLOCK = re.compile(r"<!-- runbook: (?P<name>[\w-]+) -->\n```bash\n(?P<body>.*?)\n```", re.S)


def runbook_blocks(text: str) -> dict[str, str]:
    """The runbook's command blocks by name, as the document writes them."""
    return {m["name"]: m["body"] for m in BLOCK.finditer(text)}


def test_the_runbook_blocks_are_found() -> None:
    """The parser sees every block the deployment below runs (a renamed marker fails here, not in a timeout)."""
    assert set(runbook_blocks(RUNBOOK.read_text())) >= {"database", "home", "worker", "webserver", "daemon",
                                                         "pages"}


def _demo_project(root: Path) -> Path:
    project = make_project(root, {"demo": REPO_ROOT / "assets" / "demo"})
    subprocess.run(["bash", str(project / "assets" / "demo" / "setup.sh")], check=True, capture_output=True)
    return project


@contextmanager
def _database(server: sa.URL) -> Iterator[str]:
    """A name for the runbook to create; the database is dropped afterwards, whoever created it."""
    name = f"awp_runbook_{uuid.uuid4().hex[:12]}"
    try:
        yield name
    finally:
        admin = sa.create_engine(server, isolation_level="AUTOCOMMIT", poolclass=sa.pool.NullPool)
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def _start(block: str, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(["bash", "-euc", block], env=env, stdout=log.open("w"), stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True)


def _run(block: str, env: dict[str, str]) -> None:
    done = subprocess.run(["bash", "-euc", block], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"runbook block failed:\n{block}\n{done.stdout}\n{done.stderr}"


def _get(url: str, server: subprocess.Popen[bytes], log: Path, timeout_s: float = 60) -> str:
    """The page's HTML once `awp serve` answers (it may still be starting)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(url, timeout=10) as answer:
                return str(answer.read().decode())
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"awp serve did not answer {url}:\n{log.read_text()[-3000:]}")
            time.sleep(0.5)


def _commits(repo: Path) -> str:
    return subprocess.run(["git", "-C", str(repo), "log", "--format=%B"], check=True, capture_output=True,
                          text=True).stdout


def test_the_celery_runbook_runs_and_materialize_all_completes_the_demo_with_its_repair_and_retry(
        tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = runbook_blocks(RUNBOOK.read_text())
    server = sa.make_url(pg_url)
    project = _demo_project(tmp_path / "project")
    home = tmp_path / "dagster"
    procs: list[subprocess.Popen[bytes]] = []
    with _redis() as broker, _database(server) as db_name:
        env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
               "AWP_PG_HOST": server.host or "127.0.0.1", "AWP_PG_PORT": str(server.port or 5432),
               "AWP_PG_USER": server.username or "postgres", "AWP_PG_PASSWORD": server.password or "",
               "AWP_PG_DB": db_name, "AWP_CELERY_BROKER": broker, "AWP_CELERY_BACKEND": broker,
               "DAGSTER_HOME": str(home), "AWP_PROJECT_ROOT": str(project), "AWP_DEPLOY": str(REPO_ROOT / "deploy"),
               "AWP_UI_PORT": str(free_port()), "AWP_PAGE_PORT": str(free_port())}
        env.update(AWP_PAGE_URL=f"http://127.0.0.1:{env['AWP_PAGE_PORT']}",
                   AWP_DAGSTER_URL=f"http://127.0.0.1:{env['AWP_UI_PORT']}")
        env.pop("PYTHONPATH", None)  # the runbook's own, nothing of the test's
        for name in [k for k in env if k.startswith(("AWP_PG_", "AWP_CELERY_"))]:
            monkeypatch.setenv(name, env[name])  # this test reads the instance through the same dagster.yaml
        _run(blocks["database"], env)
        try:
            for host in ("host-a", "host-b"):
                (tmp_path / host / "home").mkdir(parents=True)
                worker_env = {**env, "DAGSTER_HOME": str(tmp_path / host / "dagster"), "AWP_HOST_ID": host,
                              "HOME": str(tmp_path / host / "home"), "AWP_WORK_ROOT": str(tmp_path / host / "work")}
                _run(blocks["home"], worker_env)
                procs.append(_start(blocks["worker"], worker_env, tmp_path / host / "worker.log"))
            for name in ("webserver", "daemon", "pages"):
                procs.append(_start(blocks[name], env, tmp_path / f"{name}.log"))
            dep = Deployment(home, project, int(env["AWP_UI_PORT"]))
            wait_for_webserver(dep.port, procs, tmp_path)
            dep.wait_until(lambda i: "SENSOR" in i.get_daemon_heartbeats(), 180, "the daemon's sensor heartbeat")
            first = dep.materialize_all("demo")

            def completed(instance: DagsterInstance) -> bool:
                runs = runs_of_packet(instance, "demo")
                done = [r for r in runs if r.status.value == "SUCCESS"]
                return all(r.is_finished for r in runs) and {decided_launch(r)[0] for r in done
                                                             if r.run_id != first} >= {"02", "03"}
            dep.wait_until(completed, 600, "the demo's repair and retry to succeed")
            with dep.instance() as instance:
                launched = instance.get_run_by_id(first)
                runs = runs_of_packet(instance, "demo")
                repaired = instance.get_latest_materialization_event(AssetKey(["demo", "02_write_changelog"]))
            # The asset's first metadata entry, as a user clicks it: the Attempt page, from the runbook's server.
            assert repaired is not None and repaired.asset_materialization is not None
            link = str(repaired.asset_materialization.metadata["awp/page"].value)
            assert link.startswith(env["AWP_PAGE_URL"] + "/attempts/"), link
            page = _get(link, procs[-1], tmp_path / "pages.log")
        finally:
            stop_groups(procs)
    assert launched is not None and launched.job_name == "__ASSET_JOB"
    # The compute tagged the UI's run: the sensor found it, and its packet run is the one the others joined.
    packet_run = launched.tags["awp/packet_run"]
    assert {r.tags.get("awp/packet_run") for r in runs} == {packet_run}
    modes = sorted((*decided_launch(r)[:2], r.status.value) for r in runs if r.run_id != first)
    assert ("02", "repair", "SUCCESS") in modes and ("03", "retry", "SUCCESS") in modes, modes
    assert "Attempt 2 · repair · Write the changelog" in page and "data-result='completed'" in page, page[:2000]
    assert "packet demo" in page and "rel=prev" in page
    log = _commits(project / "assets" / "demo" / "workspace")
    for attempt in (f"{packet_run}.01.a1", f"{packet_run}.02.a2", f"{packet_run}.03.a2"):
        assert f"AWP-Attempt: {attempt}" in log, log
    # Both workers ran runs, each in its prefork pool's process.
    for host in ("host-a", "host-b"):
        worker_log = (tmp_path / host / "worker.log").read_text()
        assert "daemonic processes" not in worker_log
