"""Two "hosts" on Celery: PostgreSQL, Redis (Debian's redis-server), dagster-daemon and the webserver, two Celery
workers with their own HOME and work folder, a bare git remote. Prompts on remote repos run as Celery tasks on
both workers, each commit pushed to the packet run's branch on the remote."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
import yaml
from attack_support import Canary, rows_of
from dagster import DagsterInstance, DagsterRun, DagsterRunStatus, RunsFilter
from e2e_support import decided_attempt, prompt_of, runs_of_packet
from local_servers import serving

from tests.daemon.deployment import Deployment, deployment, free_port, make_project, stop_groups
from tests.e2e.remote_attacks import REMOTE_ROWS, attacked_project, storage_from_environment

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


def _packet(root: Path, remotes: dict[str, Path], attempts: dict[str, list[dict[str, Any]]]) -> Path:
    """One independent prompt per remote repo (01 on the first, ...), each writing `<repo>.txt`, driven by
    `attempts[prompt]` where given (the simulated provider's steps, one per Attempt)."""
    (root / "prompts").mkdir(parents=True)
    repos = {name: {"remote": {"url": str(url), "branch": "main"}} for name, url in remotes.items()}
    (root / "packet.yaml").write_text(yaml.safe_dump({
        "name": "spread", "provider": "simulated", "repos": repos,
        "recovery": {"retry": {"base_delay_ms": 0, "max_delay_ms": 0, "jitter": False}}}))
    for number, repo in enumerate(remotes, start=1):
        prompt = f"{number:02d}"
        steps = attempts.get(prompt, [{"writes": [{"path": f"{repo}.txt", "text": prompt}]}])
        front = {"id": prompt, "depends_on": [], "targets": [repo], "verify": {"files_exist": [f"{repo}:{repo}.txt"]},
                 "simulate": {"attempts": steps}}
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
                   "HOME": str(host / "home"), "AWP_WORK_ROOT": str(host / "work"), "AWP_HOST_ID": host.name,
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
    workers: list[subprocess.Popen[bytes]]

    def launch(self, prompt: str, tags: dict[str, str] | None = None) -> str:
        """One prompt's asset as a run of its own, in-process inside the Celery worker."""
        return self.dep.client().submit_job_execution(
            "packet__spread", repository_location_name="awp_pipelines", repository_name="__repository__",
            run_config={"execution": {"config": {"in_process": {}}}}, asset_selection=[["spread", f"{prompt}_work"]],
            tags=tags)

    def finished_runs(self, run_ids: list[str]) -> list[DagsterRun]:
        self.dep.wait_until(lambda i: all(r.is_finished for r in i.get_runs(RunsFilter(run_ids=run_ids))), 600,
                            "the runs to finish")
        with self.dep.instance() as instance:
            return list(instance.get_runs(RunsFilter(run_ids=run_ids)))


@contextmanager
def _topology(tmp_path: Path, db: sa.URL, make_git_repo: Callable[[Path], Path], poll_s: int | None = None,
              worker_env: dict[str, str] | None = None, repos: tuple[str, ...] = ("alpha", "beta"),
              attempts: dict[str, list[dict[str, Any]]] | None = None) -> Iterator[Topology]:
    remotes = {}
    for repo in repos:
        remotes[repo] = tmp_path / f"{repo}.git"
        _git("clone", "--quiet", "--bare", make_git_repo(tmp_path / f"seed-{repo}"), remotes[repo])
    project = make_project(tmp_path / "project", {"spread": _packet(tmp_path / "source", remotes, attempts or {})})
    hosts = [tmp_path / "host-a", tmp_path / "host-b"]
    with _redis() as broker:
        home = _home(tmp_path / "dagster-home", db, broker, poll_s)
        with _workers(home, project, broker, hosts, worker_env) as workers, deployment(home, project) as dep:
            yield Topology(dep, remotes, hosts, workers)


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


FOUR = ("alpha", "beta", "gamma", "delta")
PACKET_RUN = "pr-topology"
# 01: its first Attempt leaves partial work (draft.txt, pushed as a checkpoint) and fails; the second hangs in
# its agent until its worker is killed; the third completes on top of the first's work. 02-04 take seconds.
KILLED_MID_ATTEMPT = {
    "01": [{"writes": [{"path": "draft.txt", "text": "part1"}],
            "error": {"kind": "provider_runtime_claim", "message": "the session dropped"}},
           {"delay_ms": 900_000},
           {"writes": [{"path": "alpha.txt", "text": "01"}]}],
    **{f"{n:02d}": [{"delay_ms": 4000, "writes": [{"path": f"{repo}.txt", "text": f"{n:02d}"}]}]
       for n, repo in enumerate(FOUR, start=1) if n > 1}}


def _run_of(instance: DagsterInstance, attempt: str) -> DagsterRun | None:
    packet_run = attempt.split(".", 1)[0]
    found = [r for r in instance.get_runs(RunsFilter(tags={"awp/packet_run": packet_run}))
             if decided_attempt(r) == attempt]
    return found[0] if found else None


def test_a_worker_killed_mid_attempt_is_failed_by_its_silent_heartbeat_and_the_retry_continues_on_the_other(
        tmp_path: Path, fresh_pg_database: sa.URL, make_git_repo: Callable[[Path], Path]) -> None:
    """The Must-show topology: four independent prompts on four remote repos. One prompt is launched; the
    recovery sensor launches the rest and the retries (in-process, on whichever worker takes them). The
    worker running 01's second Attempt is killed with kill -9: Dagster's run monitoring keeps reading its
    Celery task STARTED, but its heartbeat goes silent, so the sensor fails the run, frees its slots and
    launches the third Attempt, which runs on the other worker from the checkpoint the first one pushed."""
    from awp_pipelines.dagster_compat.pools import slot_holders
    from awp_pipelines.orchestration.ledger.factory import ledger_of

    a2, a3 = f"{PACKET_RUN}.01.a2", f"{PACKET_RUN}.01.a3"
    with _topology(tmp_path, fresh_pg_database, make_git_repo, repos=FOUR, attempts=KILLED_MID_ATTEMPT,
                   worker_env={"AWP_HEARTBEAT_S": "2"}) as top:
        top.launch("01", tags={"awp/packet_run": PACKET_RUN})
        top.dep.wait_until(lambda i: _run_of(i, a2) is not None, 600, f"the sensor to launch {a2}")
        for prompt in ("02", "03", "04"):  # queued behind the retry: they run beside it, on the other worker
            top.launch(prompt, tags={"awp/packet_run": PACKET_RUN})
        top.dep.wait_until(lambda i: (r := _run_of(i, a2)) is not None  # its compute's beat, not its run's
                           and r.run_id in {b.run_id for b in ledger_of(i).beats() if not b.of_run},
                           600, f"Attempt {a2} to beat")
        with top.dep.instance() as instance:
            hung = _run_of(instance, a2)
            assert hung is not None
            [beat] = [b for b in ledger_of(instance).beats() if b.run_id == hung.run_id and not b.of_run]
            done_before = {r.run_id for r in instance.get_runs(RunsFilter(statuses=[DagsterRunStatus.SUCCESS]))}
        # In parallel: a run that succeeds now ran while 01's second Attempt was running, on the other host.
        top.dep.wait_until(lambda i: any(r.run_id not in done_before for r in i.get_runs(
            RunsFilter(statuses=[DagsterRunStatus.SUCCESS]))), 600, "a run on the other worker to succeed")
        victim = [h.name for h in top.hosts].index(beat.host)
        os.killpg(top.workers[victim].pid, signal.SIGKILL)
        top.workers[victim].wait(timeout=60)

        def settled(i: DagsterInstance) -> bool:
            runs = runs_of_packet(i, "spread")
            retry = _run_of(i, a3)
            return (retry is not None and retry.status == DagsterRunStatus.SUCCESS and len(runs) >= 6
                    and all(r.is_finished for r in runs) and not slot_holders(i))
        top.dep.wait_until(settled, 900, "the retry on the other worker and every run to end, no slot held")
        with top.dep.instance() as instance:
            killed = instance.get_run_by_id(hung.run_id)
            runs = runs_of_packet(instance, "spread")
            failure = next(e for e in instance.all_logs(hung.run_id) if e.dagster_event and
                           e.dagster_event.event_type_value == "PIPELINE_FAILURE")
    assert killed is not None and killed.status == DagsterRunStatus.FAILURE
    assert "has not beaten" in (failure.message or ""), failure.message
    by_prompt = sorted((prompt_of(r), r.status.value) for r in runs)
    assert [s for p, s in by_prompt if p != "01"] == ["SUCCESS"] * 3, by_prompt
    assert sorted(s for p, s in by_prompt if p == "01") == ["FAILURE", "FAILURE", "SUCCESS"], by_prompt
    survivor = top.hosts[1 - victim]
    assert (survivor / "work" / "spread" / "alpha").is_dir()  # the retry cloned alpha on the other host
    branch = f"refs/heads/awp/spread/{PACKET_RUN}"
    for number, (repo, remote) in enumerate(top.remotes.items(), start=1):
        commits = _git("-C", remote, "log", "--format=%H", f"main..{branch}").split()
        assert len(commits) == 1, (repo, commits)  # one commit per prompt, none doubled
        message = _git("-C", remote, "log", "-1", "--format=%B", branch)
        assert f"AWP-Prompt: {number:02d}" in message and "AWP-Attempt: " in message, message
    # The third Attempt continued from the first one's checkpoint, pushed to the remote by the first host.
    assert _git("-C", top.remotes["alpha"], "show", f"{branch}:draft.txt") == "part1"
    assert _git("-C", top.remotes["alpha"], "show", f"{branch}:alpha.txt") == "01"
    assert f"AWP-Attempt: {a3}" in _git("-C", top.remotes["alpha"], "log", "-1", "--format=%B", branch)
    checkpoints = _git("-C", top.remotes["alpha"], "for-each-ref", "--format=%(refname)", "refs/awp/checkpoints/")
    assert f"{PACKET_RUN}.01/{PACKET_RUN}.01.a1" in checkpoints



def test_the_attack_table_through_the_celery_launcher(
        tmp_path: Path, fresh_pg_database: sa.URL, monkeypatch: pytest.MonkeyPatch) -> None:
    """The sandbox's attack table (tests/e2e/test_sandbox_attacks.py) in a Celery worker of
    deploy/celery/dagster.yaml, whose environment holds AWP_PG_PASSWORD (its storage settings are read from
    there): a `command` agent in its sandbox finds the password in no environment and no /proc, cannot reach
    the instance's PostgreSQL, the operator's HOME or another account's folder, while its work is verified and
    committed and `awp agent-control` works from inside."""
    from e2e_support import attempt_records

    server = ThreadingHTTPServer(("127.0.0.1", 0), Canary)
    project, tree, remote = attacked_project(tmp_path, "sandbox", fresh_pg_database, server.server_address[1])
    with _redis() as broker, serving(server):
        home = _home(tmp_path / "dagster-home", fresh_pg_database, broker)
        config = storage_from_environment(yaml.safe_load((home / "dagster.yaml").read_text()), fresh_pg_database,
                                          monkeypatch)
        (home / "dagster.yaml").write_text(yaml.safe_dump(config))
        with _workers(home, project, broker, [tmp_path / "host-a"], {"HOME": str(tmp_path / "operator-home")}), \
                deployment(home, project) as dep:
            run_id = dep.client().submit_job_execution(
                "packet__attacked", repository_location_name="awp_pipelines", repository_name="__repository__",
                run_config={"execution": {"config": {"in_process": {}}}})
            dep.wait_until(lambda i: (r := i.get_run_by_id(run_id)) is not None and r.is_finished, 600,
                           "the attacked packet's run on the worker")
            with dep.instance() as instance:
                run = instance.get_run_by_id(run_id)
                [record] = attempt_records(instance, run_id)
    assert run is not None and run.status == DagsterRunStatus.SUCCESS, record.failure
    assert (tmp_path / "host-a" / "worker.log").read_text().count("succeeded in") == 1  # it ran on the worker
    rows = rows_of(tree, tmp_path, remote)
    assert {r: rows[r] for r in (*REMOTE_ROWS, "own_env")} == dict.fromkeys((*REMOTE_ROWS, "own_env"), "denied"), rows
    assert rows["agent_control"] == "0", rows
    assert record.result == "completed" and record.control is not None and record.control.outcome == "finish"
    assert "the real work" in _git("-C", tree, "show", "HEAD:work.txt")
