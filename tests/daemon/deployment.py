"""A real Dagster deployment for tests: `dagster-webserver` and `dagster-daemon` as separate processes on a
project folder (assets/, resources/, sensors/, workspace.yaml) and a Dagster home, launched the way an
operator launches them. Runs are started through the webserver's GraphQL API, as the UI starts them."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests
from dagster import DagsterInstance, DagsterRun, DagsterRunStatus
from dagster_graphql import DagsterGraphQLClient

REPO_ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
FINISHED = {DagsterRunStatus.SUCCESS, DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def make_project(root: Path, packets: dict[str, Path], providers: str | None = None) -> Path:
    """A project folder as the repo lays it out, holding the given packets under assets/."""
    (root / "assets").mkdir(parents=True)
    for name, source in packets.items():
        shutil.copytree(source, root / "assets" / name, ignore=shutil.ignore_patterns(".awp", "workspace"))
    shutil.copytree(REPO_ROOT / "sensors", root / "sensors")
    (root / "resources").mkdir()
    if providers is not None:
        (root / "resources" / "providers.yaml").write_text(providers, encoding="utf-8")
    shutil.copy(REPO_ROOT / "workspace.yaml", root / "workspace.yaml")
    return root


@dataclass
class Deployment:
    home: Path
    project: Path
    port: int

    def client(self) -> DagsterGraphQLClient:
        return DagsterGraphQLClient("127.0.0.1", port_number=self.port)

    def launch_job(self, job: str) -> str:
        """What "Materialize all" sends: the launchRun mutation for the packet's job."""
        return self.client().submit_job_execution(job, repository_location_name="awp_pipelines",
                                                  repository_name="__repository__")

    def materialize_all(self, group: str) -> str:
        """What "Materialize all" on the lineage page sends (dagster-webserver 1.13's launch): the implicit
        `__ASSET_JOB` with every asset of the group and their checks, no run config, no tags."""
        nodes = self._graphql("""query { assetNodes { assetKey { path } groupName
            assetChecksOrError { ... on AssetChecks { checks { name } } } } }""")["assetNodes"]
        mine = [n for n in nodes if n["groupName"] == group]
        selector = {"repositoryLocationName": "awp_pipelines", "repositoryName": "__repository__",
                    "jobName": "__ASSET_JOB", "assetSelection": [n["assetKey"] for n in mine],
                    "assetCheckSelection": [{"assetKey": n["assetKey"], "name": c["name"]} for n in mine
                                            for c in n["assetChecksOrError"].get("checks", [])]}
        launched = self._graphql("""mutation ($params: ExecutionParams!) {
            launchPipelineExecution(executionParams: $params) { __typename
              ... on LaunchRunSuccess { run { runId } } ... on PythonError { message } } }""",
                                 {"params": {"selector": selector, "runConfigData": {}, "mode": "default",
                                             "executionMetadata": {"tags": []}}})["launchPipelineExecution"]
        assert launched["__typename"] == "LaunchRunSuccess", launched
        return str(launched["run"]["runId"])

    def _graphql(self, query: str, variables: dict[str, object] | None = None) -> dict[str, Any]:
        answer = requests.post(f"http://127.0.0.1:{self.port}/graphql", json={"query": query,
                               "variables": variables or {}}, timeout=60).json()
        assert "errors" not in answer, answer
        return dict(answer["data"])

    def instance(self) -> DagsterInstance:
        return DagsterInstance.from_config(str(self.home))

    def wait_for_ticks(self, sensor: str, count: int, timeout_s: float = 180) -> None:
        """Wait until `sensor` has completed `count` ticks (succeeded or skipped) that started from now, read
        from the instance's tick table: a test that then asserts "nothing launched" knows the sensor looked."""
        since = time.time()
        self.wait_until(lambda i: sensor_ticks(i, sensor, since) >= count, timeout_s, f"{count} ticks of {sensor}")

    def wait_until(self, done: Callable[[DagsterInstance], bool], timeout_s: float, what: str) -> None:
        deadline = time.monotonic() + timeout_s
        with self.instance() as instance:
            while time.monotonic() < deadline:
                if done(instance):
                    return
                time.sleep(2)
            runs = [(r.run_id[:8], r.status.value, dict(r.tags)) for r in instance.get_runs(limit=20)]
        raise AssertionError(f"timed out after {timeout_s:.0f}s waiting for {what}; runs: {runs}")


def sensor_ticks(instance: DagsterInstance, sensor: str, since: float) -> int:
    """How many ticks of `sensor` started after `since` and completed without an error."""
    from dagster._core.scheduler.instigation import InstigatorType, TickStatus

    for state in instance.all_instigator_state(instigator_type=InstigatorType.SENSOR):
        if state.name == sensor:
            ticks = instance.get_ticks(state.instigator_origin_id, state.selector_id, after=since)
            return sum(1 for tick in ticks if tick.status in (TickStatus.SUCCESS, TickStatus.SKIPPED))
    return 0


def init_workspaces(project: Path, packets: list[str]) -> None:
    """Each packet's `workspace` repo, with one empty commit (make_project copies packets without theirs)."""
    for name in packets:
        repo = project / "assets" / name / "workspace"
        subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
        subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
                        "--allow-empty", "-m", "init"], check=True)


def embedded_home(home: Path) -> Path:
    """A Dagster home holding the embedded instance's dagster.yaml (SQLite, as `awp run` makes it)."""
    from awp_pipelines.orchestration.ledger.instance import embedded_config

    home.mkdir(parents=True)
    (home / "dagster.yaml").write_text(embedded_config(home))
    return home


def all_finished(instance: DagsterInstance, runs: list[DagsterRun]) -> bool:
    return bool(runs) and all(r.status in FINISHED for r in runs)


@contextmanager
def deployment(home: Path, project: Path, env: dict[str, str] | None = None) -> Iterator[Deployment]:
    """Start the webserver and the daemon; stop both (their whole process groups) on the way out."""
    port = free_port()
    full_env = {**os.environ, "DAGSTER_HOME": str(home), "AWP_PROJECT_ROOT": str(project),
                "PYTHONPATH": str(REPO_ROOT), **(env or {})}
    logs = home / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    # Created once, before the two processes start, as `awp run` and `make ui` do: two processes creating
    # a fresh SQLite instance at once stamp two alembic heads (the probe's broken instance).
    if not (home / "history").exists():
        from awp_pipelines.orchestration.ledger.instance import open_instance_folder

        open_instance_folder(home).dispose()
    procs = []
    try:
        for name, argv in (("webserver", [str(BIN / "dagster-webserver"), "-w", "workspace.yaml", "-h", "127.0.0.1",
                                          "-p", str(port)]),
                           ("daemon", [str(BIN / "dagster-daemon"), "run", "-w", "workspace.yaml"])):
            out = (logs / f"{name}.log").open("w")
            procs.append(subprocess.Popen(argv, cwd=project, env=full_env, stdout=out, stderr=subprocess.STDOUT,
                                          stdin=subprocess.DEVNULL, start_new_session=True))
        dep = Deployment(home, project, port)
        wait_for_webserver(port, procs, logs)
        dep.wait_until(lambda i: "SENSOR" in i.get_daemon_heartbeats(), 180, "the daemon's sensor heartbeat")
        yield dep
    finally:
        stop_groups(procs)


def stop_groups(procs: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM each process group still running, then SIGKILL any that has not ended within 30 s."""
    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


def wait_for_webserver(port: int, procs: list[subprocess.Popen[bytes]], logs: Path) -> None:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if any(p.poll() is not None for p in procs):
            raise AssertionError("a Dagster process exited:\n" + "\n".join(
                f.read_text()[-3000:] for f in logs.glob("*.log")))
        try:
            if requests.get(f"http://127.0.0.1:{port}/server_info", timeout=2).ok:
                return
        except requests.RequestException:
            pass
        time.sleep(1)
    raise AssertionError("the webserver did not answer within 180 s")
