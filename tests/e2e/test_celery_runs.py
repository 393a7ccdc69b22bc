"""Two "hosts" on Celery: PostgreSQL, Redis (Debian's redis-server), dagster-daemon and the webserver, two Celery
workers with their own HOME and work folder, a bare git remote. Prompts on remote repos run as Celery tasks on
both workers, each commit pushed to the packet run's branch on the remote."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
import sqlalchemy as sa
import yaml
from dagster import DagsterRun, DagsterRunStatus, RunsFilter

from tests.daemon.deployment import Deployment, deployment, free_port, make_project, stop_groups

REPO_ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
PROMPTS = ("01", "02")


def _git(*args: str | Path) -> str:
    return subprocess.run(["git", *map(str, args)], check=True, capture_output=True, text=True).stdout


@contextmanager
def _redis() -> Iterator[str]:
    server = shutil.which("redis-server")
    if server is None:
        why = "redis-server is not installed (tests/install_redis.sh installs Debian's, as root)"
        if os.environ.get("CI", "").strip().lower() in {"true", "1", "yes"}:
            pytest.fail(f"{why}; CI must run the Celery test")
        pytest.skip(why)
    port = free_port()
    proc = subprocess.Popen([server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _packet(root: Path, remotes: dict[str, Path]) -> Path:
    (root / "prompts").mkdir(parents=True)
    repos = {name: {"remote": {"url": str(url), "branch": "main"}} for name, url in remotes.items()}
    (root / "packet.yaml").write_text(yaml.safe_dump({"name": "spread", "provider": "simulated", "repos": repos}))
    for prompt, repo in zip(PROMPTS, remotes, strict=True):
        front = {"id": prompt, "depends_on": [], "targets": [repo], "verify": {"files_exist": [f"{repo}:{repo}.txt"]},
                 "simulate": {"attempts": [{"writes": [{"path": f"{repo}.txt", "text": prompt}]}]}}
        (root / "prompts" / f"{prompt}_work.prompt.md").write_text(f"---\n{yaml.safe_dump(front)}---\n# Work\n")
    return root


def _home(folder: Path, db: sa.URL, broker: str, poll_s: int | None = None) -> Path:
    config = yaml.safe_load((REPO_ROOT / "deploy" / "celery" / "dagster.yaml").read_text())
    config["storage"] = {"postgres": {"postgres_db": {
        "username": db.username, "password": db.password or "", "hostname": db.host, "db_name": db.database,
        "port": db.port or 5432, "scheme": "postgresql+psycopg2"}}}
    config["run_launcher"]["config"]["broker"] = broker
    config["run_launcher"]["config"]["backend"] = broker
    if poll_s is not None:
        config["run_monitoring"]["poll_interval_seconds"] = poll_s
    folder.mkdir(parents=True)
    (folder / "dagster.yaml").write_text(yaml.safe_dump(config))
    return folder


@contextmanager
def _workers(home: Path, project: Path, broker: str, hosts: list[Path],
             extra_env: dict[str, str] | None = None) -> Iterator[list[subprocess.Popen[bytes]]]:
    procs = []
    try:
        for number, host in enumerate(hosts):
            (host / "home").mkdir(parents=True)
            env = {**os.environ, "DAGSTER_HOME": str(home), "AWP_PROJECT_ROOT": str(project),
                   "HOME": str(host / "home"), "AWP_WORK_ROOT": str(host / "work"),
                   "AWP_CELERY_BROKER": broker, "AWP_CELERY_BACKEND": broker,
                   # the workers' settings module (deploy/celery/dagster_celery_config.py)
                   "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), str(REPO_ROOT / "deploy" / "celery")]),
                   **(extra_env or {})}
            log = (host / "worker.log").open("w")
            procs.append(subprocess.Popen(
                [str(BIN / "celery"), "-A", "dagster_celery.app", "worker", "-Q", "dagster",
                 "--pool", "solo", "--concurrency", "1", "--prefetch-multiplier", "1", "--loglevel", "INFO",
                 "-n", f"host{number}@%h"],
                cwd=project, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
        yield procs
    finally:
        stop_groups(procs)


@dataclass
class Topology:
    dep: Deployment
    remotes: dict[str, Path]
    hosts: list[Path]

    def launch(self, prompt: str) -> str:
        """One prompt's asset as a run of its own, in-process inside the Celery worker."""
        return self.dep.client().submit_job_execution(
            "packet__spread", repository_location_name="awp_pipelines", repository_name="__repository__",
            run_config={"execution": {"config": {"in_process": {}}}}, asset_selection=[["spread", f"{prompt}_work"]])

    def finished_runs(self, run_ids: list[str]) -> list[DagsterRun]:
        self.dep.wait_until(lambda i: all(r.is_finished for r in i.get_runs(RunsFilter(run_ids=run_ids))), 600,
                            "the runs to finish")
        with self.dep.instance() as instance:
            return list(instance.get_runs(RunsFilter(run_ids=run_ids)))


@contextmanager
def _topology(tmp_path: Path, db: sa.URL, make_git_repo: Callable[[Path], Path], poll_s: int | None = None,
              worker_env: dict[str, str] | None = None) -> Iterator[Topology]:
    remotes = {}
    for repo in ("alpha", "beta"):
        remotes[repo] = tmp_path / f"{repo}.git"
        _git("clone", "--quiet", "--bare", make_git_repo(tmp_path / f"seed-{repo}"), remotes[repo])
    project = make_project(tmp_path / "project", {"spread": _packet(tmp_path / "source", remotes)})
    hosts = [tmp_path / "host-a", tmp_path / "host-b"]
    with _redis() as broker:
        home = _home(tmp_path / "dagster-home", db, broker, poll_s)
        with _workers(home, project, broker, hosts, worker_env), deployment(home, project) as dep:
            yield Topology(dep, remotes, hosts)


def test_prompts_on_remote_repos_run_as_celery_tasks_on_two_hosts_and_push_their_commits(
        tmp_path: Path, fresh_pg_database: sa.URL, make_git_repo: Callable[[Path], Path]) -> None:
    with _topology(tmp_path, fresh_pg_database, make_git_repo) as top:
        runs = top.finished_runs([top.launch(prompt) for prompt in PROMPTS])
    assert [r.status for r in runs] == [DagsterRunStatus.SUCCESS] * 2, [(r.run_id, r.status) for r in runs]
    packet_runs = {r.tags["awp/packet_run"] for r in runs}
    hosts, remotes = top.hosts, top.remotes
    # One run on each host: each cloned only the repo its prompt targets, under its own work root.
    clones = {h.name: sorted(p.name for p in (h / "work" / "spread").iterdir()) for h in hosts
              if (h / "work" / "spread").is_dir()}
    assert sorted(sum(clones.values(), [])) == ["alpha", "beta"] and len(clones) == 2, clones
    for host in hosts:
        assert (host / "worker.log").read_text().count("succeeded in") == 1
    for (repo, remote), prompt in zip(remotes.items(), PROMPTS, strict=True):
        [branch] = [b for b in _git("-C", remote, "for-each-ref", "--format=%(refname)", "refs/heads/awp/").split()]
        assert branch.rsplit("/", 1)[-1] in packet_runs
        message = _git("-C", remote, "log", "-1", "--format=%B", branch)
        assert f"AWP-Prompt: {prompt}" in message
        assert _git("-C", remote, "show", f"{branch}:{repo}.txt") == prompt


def test_a_long_attempt_on_a_celery_worker_is_not_failed_by_run_monitoring(
        tmp_path: Path, fresh_pg_database: sa.URL, make_git_repo: Callable[[Path], Path]) -> None:
    """Run monitoring reads the task's state from the result backend: with dagster-celery's rpc:// default a
    running task read PENDING and the run was failed at the first poll, mid-Attempt. Here the Attempt
    outlasts several 5 s polls."""
    with _topology(tmp_path, fresh_pg_database, make_git_repo, poll_s=5,
                   worker_env={"AWP_FAULT_PAUSE": "before_agent:25"}) as top:
        [run] = top.finished_runs([top.launch("01")])
    assert run.status == DagsterRunStatus.SUCCESS, run.status
