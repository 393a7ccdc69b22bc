"""One packet run through `DockerRunLauncher` (deploy/docker/dagster.yaml): each run a container on the host
network; a container killed mid-Attempt is noticed by Dagster's run monitoring (the launcher sees the
container exit), and the recovery sensor's retry completes.

The test starts a private dockerd (tests/install_docker.sh start: no bridge, no iptables, vfs) and builds, in
about a second, an image holding nothing but empty mount points: each container runs this machine's own
Python, venv and git, bind-mounted read-only (/usr, /etc, the interpreter's prefix, the repo), and the test's
folder read-write. deploy/Dockerfile stays the production image; building it needs a registry or minutes.
Skipped with the reason where dockerd is missing or cannot start (not root, no privileges)."""

from __future__ import annotations

import io
import os
import socket
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable, Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import docker
import pytest
import sqlalchemy as sa
import yaml
from attack_support import Canary, rows_of
from dagster import DagsterInstance, DagsterRun, DagsterRunStatus
from e2e_support import decided_attempt, runs_of_packet
from local_servers import serving

from tests.daemon.deployment import deployment, make_project
from tests.e2e.remote_attacks import REMOTE_ROWS, STORAGE_ENV, attacked_project, storage_from_environment
from tests.e2e.test_celery_runs import REPO_ROOT, _git, _packet, _run_of

PACKET_RUN = "pr-docker"
HANGS_THEN_WRITES: dict[str, list[dict[str, Any]]] = {
    "01": [{"delay_ms": 900_000}, {"writes": [{"path": "alpha.txt", "text": "01"}]}]}
IMAGE = "awp-host-fs:test"
SCRIPT = REPO_ROOT / "tests" / "install_docker.sh"


def _start_dockerd(folder: Path) -> str:
    """The private dockerd's URL, or the test skipped with why it cannot start here."""
    if os.geteuid() != 0:
        pytest.skip("dockerd needs root here (tests/install_docker.sh starts a private one as root)")
    done = subprocess.run(["bash", str(SCRIPT), "start", str(folder)], capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        pytest.skip(f"dockerd could not start: {done.stderr.strip()[-600:]}")
    return done.stdout.strip()


@pytest.fixture(scope="session")  # session-scoped like pg_url, and listed first: asked before it
def docker_host() -> Iterator[str]:
    """A private dockerd for this test session (stopped, with its containers, on the way out)."""
    if subprocess.run(["bash", "-c", "command -v dockerd"], capture_output=True).returncode != 0:
        pytest.skip("dockerd is not installed (tests/install_docker.sh installs Debian's docker.io, as root)")
    folder = Path(tempfile.mkdtemp(prefix="awp-dockerd.", dir="/tmp"))  # short: the socket path has a limit
    try:
        yield _start_dockerd(folder)
    finally:
        subprocess.run(["bash", str(SCRIPT), "stop", str(folder)], capture_output=True, timeout=120)


def _host_mounts() -> list[str]:
    """The host folders a container needs to run this venv's Python and git: read-only binds."""
    roots = {Path("/usr"), Path("/etc")}
    roots |= {Path(p) for p in ("/bin", "/sbin", "/lib", "/lib32", "/lib64") if Path(p).is_dir()
              and not Path(p).is_symlink()}
    roots.add(Path(os.path.realpath(sys.base_prefix)))  # a pyenv or uv interpreter lives outside /usr
    roots |= {REPO_ROOT, Path(sys.prefix)}  # the editable install and the venv
    kept = sorted(r for r in roots if not any(o != r and r.is_relative_to(o) for o in roots))
    return [f"{r}:{r}:ro" for r in kept]


def _image(client: docker.DockerClient) -> str:
    """An image of empty mount points and the host's /bin-style symlinks (merged-/usr Debian), built here."""
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w") as tar:
        for name in ("tmp", "root"):
            info = tarfile.TarInfo(name)
            info.type, info.mode = tarfile.DIRTYPE, 0o1777 if name == "tmp" else 0o700
            tar.addfile(info)
        for name in ("bin", "sbin", "lib", "lib32", "lib64"):
            if Path("/", name).is_symlink():
                info = tarfile.TarInfo(name)
                info.type, info.linkname = tarfile.SYMTYPE, os.readlink(Path("/", name))
                tar.addfile(info)
    repository, tag = IMAGE.split(":")
    client.api.import_image_from_data(data.getvalue(), repository=repository, tag=tag)
    return IMAGE


def _post_mortem(client: docker.DockerClient, instance: DagsterInstance, run_id: str) -> str:
    """The run's engine messages and each container's state and last output: why a run ended early."""
    containers = [f"{c.short_id} {c.status} {c.attrs['State'].get('Error')!r} {c.attrs['Path']}:\n"
                  f"{c.logs(tail=30).decode(errors='replace')}" for c in client.containers.list(all=True)]
    return "\n".join([e.message or "" for e in instance.all_logs(run_id)] + containers)


def _home(folder: Path, db: sa.URL, image: str, mounts: list[str], tmp: Path) -> Path:
    config = yaml.safe_load((REPO_ROOT / "deploy" / "docker" / "dagster.yaml").read_text())
    config["storage"] = {"postgres": {"postgres_db": {
        "username": db.username, "password": db.password or "", "hostname": db.host, "db_name": db.database,
        "port": db.port or 5432, "scheme": "postgresql+psycopg2"}}}
    launcher = config["run_launcher"]["config"]
    launcher["image"] = image
    launcher["env_vars"] = ["AWP_PROJECT_ROOT", "AWP_HEARTBEAT_S=2", f"AWP_WORK_ROOT={tmp / 'work'}",
                            f"HOME={tmp / 'home'}",
                            f"PATH={Path(sys.executable).parent}:/usr/bin:/bin"]  # the launcher runs `dagster`
    # The test's project, bare remotes and Dagster home at the same paths inside the container.
    launcher["container_kwargs"]["volumes"] = [*mounts, f"{tmp}:{tmp}"]
    config["run_monitoring"]["poll_interval_seconds"] = 2
    folder.mkdir(parents=True)
    (folder / "dagster.yaml").write_text(yaml.safe_dump(config))
    return folder


def test_a_killed_container_is_noticed_and_the_retry_completes(
        docker_host: str, tmp_path: Path, fresh_pg_database: sa.URL, make_git_repo: Callable[[Path], Path]) -> None:
    """01's first Attempt hangs in its agent, in its container; `docker kill` ends the container (pid 1 is the
    run worker): run monitoring fails the run, the recovery sensor launches the second Attempt in a new
    container, which pushes the prompt's one commit; no run is left unfinished and no slot held."""
    from awp_pipelines.dagster_compat.pools import slot_holders
    from awp_pipelines.orchestration.ledger.factory import ledger_of

    client = docker.DockerClient(base_url=docker_host, timeout=60)
    remote = tmp_path / "alpha.git"
    _git("clone", "--quiet", "--bare", make_git_repo(tmp_path / "seed-alpha"), remote)
    project = make_project(tmp_path / "project", {"spread": _packet(tmp_path / "source", {"alpha": remote},
                                                                     HANGS_THEN_WRITES)})
    home = _home(tmp_path / "dagster-home", fresh_pg_database, _image(client), _host_mounts(), tmp_path)
    a1, a2 = f"{PACKET_RUN}.01.a1", f"{PACKET_RUN}.01.a2"
    with deployment(home, project, env={"DOCKER_HOST": docker_host}) as dep:
        # The launchpad's run: its Attempt (a1) is decided by its compute, not in its config (no `_run_of`).
        first = dep.client().submit_job_execution(
            "packet__spread", repository_location_name="awp_pipelines", repository_name="__repository__",
            asset_selection=[["spread", "01_work"]], tags={"awp/packet_run": PACKET_RUN})
        # Mid-Attempt: the run beats from inside its container, and its agent hangs for 15 minutes.
        dep.wait_until(lambda i: (r := i.get_run_by_id(first)) is not None and (r.is_finished or (
            "docker/container_id" in r.tags
            and r.run_id in {b.run_id for b in ledger_of(i).beats() if not b.of_run})), 600,
                       f"Attempt {a1} to beat in its container")
        with dep.instance() as instance:
            hung = instance.get_run_by_id(first)
            assert hung is not None
            assert hung.status == DagsterRunStatus.STARTED, _post_mortem(client, instance, hung.run_id)
            [beat] = [b for b in ledger_of(instance).beats() if b.run_id == hung.run_id and not b.of_run]
        # The container shares the host's name (host network) but not its pids: it names itself by its id.
        assert beat.host == f"{socket.gethostname()}/{hung.tags['docker/container_id'][:12]}"
        container = client.containers.get(hung.tags["docker/container_id"])
        container.kill()

        def settled(i: DagsterInstance) -> bool:
            runs = runs_of_packet(i, "spread")
            retry = _run_of(i, a2)
            return retry is not None and retry.is_finished and all(r.is_finished for r in runs) \
                and not slot_holders(i)
        dep.wait_until(settled, 600, f"the retry {a2} and every run to end, no slot held")
        with dep.instance() as instance:
            killed, retry = instance.get_run_by_id(hung.run_id), _run_of(instance, a2)
            runs = runs_of_packet(instance, "spread")
            failure = next(e for e in instance.all_logs(hung.run_id) if e.dagster_event and
                           e.dagster_event.event_type_value == "PIPELINE_FAILURE")
    container.reload()
    assert container.attrs["State"]["ExitCode"] == 137  # SIGKILL: the container died, nothing ended it cleanly
    assert killed is not None and killed.status == DagsterRunStatus.FAILURE
    assert retry is not None and retry.status == DagsterRunStatus.SUCCESS, retry
    assert retry.tags["docker/container_id"] != hung.tags["docker/container_id"]  # a container of its own
    assert sorted(r.status.value for r in runs) == ["FAILURE", "SUCCESS"], [(r.tags, r.status) for r in runs]
    # Failed by run monitoring reading the container's state (not by the heartbeat's slower silence).
    assert "Container status is exited" in (failure.message or ""), failure.message
    branch = f"refs/heads/awp/spread/{PACKET_RUN}"
    assert _git("-C", remote, "show", f"{branch}:alpha.txt") == "01"
    assert len(_git("-C", remote, "log", "--format=%H", f"main..{branch}").split()) == 1  # one commit, not two
    assert f"AWP-Attempt: {a2}" in _git("-C", remote, "log", "-1", "--format=%B", branch)



def test_materialize_all_from_the_lineage_page_completes_in_containers_with_its_repair(
        docker_host: str, tmp_path: Path, fresh_pg_database: sa.URL, make_git_repo: Callable[[Path], Path]) -> None:
    """"Materialize all" on the lineage page launches Dagster's own `__ASSET_JOB`, untagged, into a container: its
    steps run by AWP's executor rules there (in process: the run worker is the container's pid 1), the compute tags
    the run, and the recovery sensor launches 01's repair in a container of its own; both prompts end committed."""
    from awp_pipelines.dagster_compat.pools import slot_holders
    from awp_pipelines.orchestration.ledger.factory import ledger_of

    client = docker.DockerClient(base_url=docker_host, timeout=60)
    remotes = {}
    for name in ("alpha", "beta"):
        remotes[name] = tmp_path / f"{name}.git"
        _git("clone", "--quiet", "--bare", make_git_repo(tmp_path / f"seed-{name}"), remotes[name])
    misses_then_writes = {"01": [{"messages": ["nothing written yet"]},
                                 {"writes": [{"path": "alpha.txt", "text": "01"}]}]}
    project = make_project(tmp_path / "project", {"spread": _packet(tmp_path / "source", remotes,
                                                                     misses_then_writes)})
    home = _home(tmp_path / "dagster-home", fresh_pg_database, _image(client), _host_mounts(), tmp_path)
    with deployment(home, project, env={"DOCKER_HOST": docker_host}) as dep:
        first = dep.materialize_all("spread")

        def family(i: DagsterInstance) -> list[DagsterRun]:
            """The UI's run and the runs of the packet run its compute tagged it with."""
            run = i.get_run_by_id(first)
            packet_run = run.tags.get("awp/packet_run") if run else None
            return ledger_of(i).attempt_log(packet_run).runs if packet_run else []

        def settled(i: DagsterInstance) -> bool:
            runs = family(i)
            return len(runs) >= 2 and all(r.is_finished for r in runs) and not slot_holders(i)
        dep.wait_until(settled, 600, "the asset job and 01's repair to end, no slot held")
        with dep.instance() as instance:
            launched, runs = instance.get_run_by_id(first), family(instance)
            assert launched is not None, _post_mortem(client, instance, first)
    assert launched.job_name == "__ASSET_JOB" and "docker/container_id" in launched.tags
    packet_run = launched.tags["awp/packet_run"]  # the compute tagged the UI's run; the repair joined it
    [repair] = [r for r in runs if r.run_id != first]
    assert repair.status == DagsterRunStatus.SUCCESS and decided_attempt(repair) == f"{packet_run}.01.a2"
    assert repair.tags["docker/container_id"] != launched.tags["docker/container_id"]
    branch = f"refs/heads/awp/spread/{packet_run}"
    assert _git("-C", remotes["alpha"], "show", f"{branch}:alpha.txt") == "01"
    assert _git("-C", remotes["beta"], "show", f"{branch}:beta.txt") == "02"
    assert f"AWP-Attempt: {packet_run}.01.a2" in _git("-C", remotes["alpha"], "log", "-1", "--format=%B", branch)

@pytest.mark.parametrize("isolation", ["sandbox", "none"])
def test_the_attack_table_through_the_docker_launcher(
        isolation: str, docker_host: str, tmp_path: Path, fresh_pg_database: sa.URL,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The sandbox's attack table (tests/e2e/test_sandbox_attacks.py) in a run container of the production
    launcher and its security options (deploy/docker/dagster.yaml), the agent a `command` agent: the storage
    settings are passed into the container by name, so the run worker (pid 1 there) holds AWP_PG_PASSWORD,
    yet the agent finds it neither in its own environment nor in /proc/1/environ, its parent's or any
    process's, cannot reach the instance's PostgreSQL, the operator's HOME or another account's folder, while
    its work is verified and committed and `awp agent-control` works from inside. With `isolation: none` the
    same rows get through (the environment allowlist alone still keeps the password out of its environment),
    and the hook the script then writes into `.git` ends the Attempt `tree_tampered`: nothing is committed."""
    from e2e_support import attempt_records

    client = docker.DockerClient(base_url=docker_host, timeout=60)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Canary)  # on the host network: a container reaches it
    project, tree, remote = attacked_project(tmp_path, isolation, fresh_pg_database, server.server_address[1])
    home = _home(tmp_path / "dagster-home", fresh_pg_database, _image(client), _host_mounts(), tmp_path)
    config = storage_from_environment(yaml.safe_load((home / "dagster.yaml").read_text()), fresh_pg_database,
                                      monkeypatch)
    launcher = config["run_launcher"]["config"]
    launcher["env_vars"] = [*launcher["env_vars"], *STORAGE_ENV, "AWP_TEST_AGENT_KEY",
                            f"HOME={tmp_path / 'operator-home'}"]
    (home / "dagster.yaml").write_text(yaml.safe_dump(config))
    with serving(server), deployment(home, project, env={"DOCKER_HOST": docker_host}) as dep:
        run_id = dep.launch_job("packet__attacked")
        dep.wait_until(lambda i: (r := i.get_run_by_id(run_id)) is not None and r.is_finished, 600,
                       "the attacked packet's run in its container")
        with dep.instance() as instance:
            run = instance.get_run_by_id(run_id)
            ended = DagsterRunStatus.SUCCESS if isolation == "sandbox" else DagsterRunStatus.FAILURE
            assert run is not None and run.status == ended, _post_mortem(client, instance, run_id)
            [record] = attempt_records(instance, run_id)
    assert "docker/container_id" in run.tags  # it ran in a container, not beside the daemon
    rows = rows_of(tree, tmp_path, remote)
    expected = dict.fromkeys(REMOTE_ROWS, "denied" if isolation == "sandbox" else "LEAK")
    assert {r: rows[r] for r in REMOTE_ROWS} == expected, rows
    assert rows["own_env"] == "denied", rows  # the allowlist, with or without the sandbox
    assert rows["agent_control"] == "0", rows
    if isolation == "none":  # AWP's git never runs the hook it wrote: the tamper check ends the Attempt
        assert record.result == "tree_tampered" and record.failure is not None
        assert ".git/hooks/" in record.failure.message
        return
    assert record.result == "completed" and record.control is not None and record.control.outcome == "finish"
    assert "the real work" in _git("-C", tree, "show", "HEAD:work.txt")
