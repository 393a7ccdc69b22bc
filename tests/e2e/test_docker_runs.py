"""One packet run through `DockerRunLauncher` (deploy/docker/dagster.yaml): each run a container of the AWP
image on the host network; a container killed mid-Attempt is noticed by Dagster's run monitoring (the
launcher sees the container exit), and the recovery sensor's retry completes. Needs a running dockerd and a
built image (AWP_TEST_DOCKER_IMAGE: deploy/Dockerfile, or its debootstrap base); skipped with the reason
otherwise (no dockerd on the CI machines here)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import sqlalchemy as sa
import yaml
from dagster import DagsterRunStatus

from tests.daemon.deployment import deployment, make_project
from tests.e2e.test_celery_runs import REPO_ROOT, _git, _packet, _run_of

PACKET_RUN = "pr-docker"
HANGS_THEN_WRITES = {"01": [{"delay_ms": 900_000}, {"writes": [{"path": "alpha.txt", "text": "01"}]}]}


def _docker_unavailable() -> str | None:
    """Why this machine cannot run the test, or None."""
    if shutil.which("dockerd") is None:
        return "dockerd is not installed (Debian's docker.io): no Docker engine to launch runs in"
    try:
        subprocess.run(["docker", "info"], check=True, capture_output=True, timeout=20)
    except (OSError, subprocess.SubprocessError) as err:
        return f"dockerd is not running or not reachable ({type(err).__name__})"
    if not os.environ.get("AWP_TEST_DOCKER_IMAGE"):
        return "AWP_TEST_DOCKER_IMAGE is not set: build deploy/Dockerfile and name the image"
    return None


@pytest.fixture(scope="session")  # session-scoped like pg_url, and listed first: asked before it
def docker_image() -> str:
    """The image to run, or the test skipped with why (asked before PostgreSQL is set up)."""
    reason = _docker_unavailable()
    if reason:
        pytest.skip(reason)
    return os.environ["AWP_TEST_DOCKER_IMAGE"]


def _home(folder: Path, db: sa.URL, image: str, mounts: list[Path]) -> Path:
    config = yaml.safe_load((REPO_ROOT / "deploy" / "docker" / "dagster.yaml").read_text())
    config["storage"] = {"postgres": {"postgres_db": {
        "username": db.username, "password": db.password or "", "hostname": db.host, "db_name": db.database,
        "port": db.port or 5432, "scheme": "postgresql+psycopg2"}}}
    launcher = config["run_launcher"]["config"]
    launcher["image"] = image
    launcher["env_vars"] = ["AWP_PROJECT_ROOT", "AWP_HEARTBEAT_S=2", "AWP_WORK_ROOT=/work"]
    # The test's project and bare remotes at the same paths inside the container.
    launcher["container_kwargs"]["volumes"] = [f"{m}:{m}" for m in mounts]
    config["run_monitoring"]["poll_interval_seconds"] = 2
    folder.mkdir(parents=True)
    (folder / "dagster.yaml").write_text(yaml.safe_dump(config))
    return folder


def test_a_killed_container_is_noticed_and_the_retry_completes(
        docker_image: str, tmp_path: Path, fresh_pg_database: sa.URL, make_git_repo: Callable[[Path], Path]) -> None:
    remote = tmp_path / "alpha.git"
    _git("clone", "--quiet", "--bare", make_git_repo(tmp_path / "seed-alpha"), remote)
    project = make_project(tmp_path / "project", {"spread": _packet(tmp_path / "source", {"alpha": remote},
                                                                     HANGS_THEN_WRITES)})
    home = _home(tmp_path / "dagster-home", fresh_pg_database, docker_image, [tmp_path])
    a1, a2 = f"{PACKET_RUN}.01.a1", f"{PACKET_RUN}.01.a2"
    with deployment(home, project) as dep:
        dep.client().submit_job_execution(
            "packet__spread", repository_location_name="awp_pipelines", repository_name="__repository__",
            asset_selection=[["spread", "01_work"]], tags={"awp/packet_run": PACKET_RUN})
        dep.wait_until(lambda i: (r := _run_of(i, a1)) is not None and r.status == DagsterRunStatus.STARTED
                       and "docker/container_id" in r.tags, 600, f"Attempt {a1} to run in its container")
        with dep.instance() as instance:
            hung = _run_of(instance, a1)
            assert hung is not None
        subprocess.run(["docker", "kill", hung.tags["docker/container_id"]], check=True, capture_output=True,
                       timeout=60)
        dep.wait_until(lambda i: (r := _run_of(i, a2)) is not None and r.is_finished, 600, f"the retry {a2}")
        with dep.instance() as instance:
            killed, retry = instance.get_run_by_id(hung.run_id), _run_of(instance, a2)
    assert killed is not None and killed.status == DagsterRunStatus.FAILURE
    assert retry is not None and retry.status == DagsterRunStatus.SUCCESS
    branch = f"refs/heads/awp/spread/{PACKET_RUN}"
    assert _git("-C", remote, "show", f"{branch}:alpha.txt") == "01"
    assert len(_git("-C", remote, "log", "--format=%H", f"main..{branch}").split()) == 1
