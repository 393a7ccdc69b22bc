"""Dagster daemon cost: every 60 s the daemon refreshes its workspace and fetches every job's full snapshot from
the code server again, one ExternalJob call per job, although the repository snapshot it has just read names
each job's snapshot id and none has changed. A location with 200 jobs costs the daemon and a standing code
server most of 10% of a core doing only that (AWP's bench/sensor_daemon_cpu.py, the `bare` shape).

Runs on bare Dagster (no AWP): `python tools/upstream/daemon_refetches_unchanged_jobs.py [--jobs 200]`.
Starts `dagster api grpc` on a module of N one-asset jobs, opens the workspace as `dagster-daemon run` does
(a WorkspaceProcessContext on a grpc_server entry) and calls `refresh_workspace()` twice, as
`DagsterDaemonController.check_workspace_freshness` does every RELOAD_WORKSPACE_INTERVAL (60 s). Exit 0 and
"REPRODUCED" when the second refresh fetched every job again though every snapshot id was unchanged.

Why: `sync_get_external_repositories_data_grpc` (dagster/_api/snapshot_repository.py) asks for the repository
with `defer_snapshots=True`, gets `job_refs` that carry each job's `snapshot_id`, and then calls
`api_client.external_job` for every ref, with no look at the snapshots the workspace already holds.

Proposed fix: keep the previous location's job snapshots by snapshot id across `refresh_workspace()` (or make
the refresh ask the server for `GetCurrentImage`/server id first and skip the reload when it is unchanged), and
fetch only the jobs whose snapshot id is new.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODULE = """from dagster import Definitions, asset, define_asset_job

assets, jobs = [], []
for n in range({jobs}):
    @asset(name=f"a{{n:03d}}")
    def _a() -> None: ...
    assets.append(_a)
    jobs.append(define_asset_job(f"job{{n:03d}}", selection=[_a]))

defs = Definitions(assets=assets, jobs=jobs)
"""


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=200)
    args = parser.parse_args()

    import dagster
    from dagster import DagsterInstance
    from dagster._core.workspace.context import WorkspaceProcessContext
    from dagster._core.workspace.load_target import WorkspaceFileTarget
    from dagster._grpc.client import DagsterGrpcClient

    fetched: list[str] = []
    real = DagsterGrpcClient.external_job

    def counting(self: DagsterGrpcClient, origin: object, job_name: str) -> object:
        fetched.append(job_name)
        return real(self, origin, job_name)  # type: ignore[arg-type]

    DagsterGrpcClient.external_job = counting  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "many_jobs.py").write_text(MODULE.format(jobs=args.jobs), encoding="utf-8")
        port = free_port()
        server = subprocess.Popen([sys.executable, "-m", "dagster", "api", "grpc", "-f", "many_jobs.py",
                                   "-h", "127.0.0.1", "-p", str(port)], cwd=folder,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 120
            while subprocess.run([sys.executable, "-m", "dagster", "api", "grpc-health-check", "-p", str(port)],
                                 capture_output=True).returncode != 0:
                if server.poll() is not None or time.monotonic() > deadline:
                    print("the gRPC server did not start")
                    return 2
                time.sleep(0.5)
            (folder / "workspace.yaml").write_text(
                f"load_from:\n  - grpc_server:\n      host: 127.0.0.1\n      port: {port}\n"
                "      location_name: many\n", encoding="utf-8")
            (folder / "home").mkdir()
            with DagsterInstance.local_temp(str(folder / "home")) as instance, WorkspaceProcessContext(
                    instance, WorkspaceFileTarget(paths=[str(folder / "workspace.yaml")])) as context:
                ids = _snapshot_ids(context)
                first = len(fetched)
                started = time.perf_counter()
                context.refresh_workspace()
                refresh_s = time.perf_counter() - started
                again = len(fetched) - first
                unchanged = _snapshot_ids(context) == ids
        finally:
            server.terminate()
            server.wait(timeout=60)
    print(f"dagster {dagster.__version__}: {args.jobs} jobs; the first load fetched {first} job snapshots; a "
          f"refresh with every snapshot id unchanged ({unchanged}) fetched {again} again in {refresh_s:.2f} s")
    if unchanged and again >= args.jobs:
        print("REPRODUCED: each workspace refresh (every 60 s in dagster-daemon) fetches every job's snapshot "
              "again although none changed")
        return 0
    print("not reproduced: the refresh kept the unchanged job snapshots")
    return 1


def _snapshot_ids(context: object) -> dict[str, str]:
    request = context.create_request_context()  # type: ignore[attr-defined]
    location = request.get_code_location("many")
    return {job.name: job.identifying_job_snapshot_id
            for repo in location.get_repositories().values() for job in repo.get_all_jobs()}


if __name__ == "__main__":
    sys.exit(main())
