"""Liveness across hosts (ledger/liveness.py, `Ledger.reap`): a running compute beats in the instance; a run whose
beat went silent (its Celery worker killed with kill -9, its host lost) is failed and its slots freed, which
Dagster's run monitoring never does for a Celery task left STARTED."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from dagster import DagsterInstance, DagsterRunStatus
from dagster._core.executor.in_process import InProcessExecutor
from dagster._core.executor.multiprocess import MultiprocessExecutor
from dagster._core.test_utils import create_run_for_test

from awp_pipelines.core.engine.hosts import container_host, host_id
from awp_pipelines.dagster_compat.pools import claimed_slots
from awp_pipelines.orchestration.compute.step_executor import RunBeatingExecutor, parallel_executor
from awp_pipelines.orchestration.ledger.factory import ledger_of
from awp_pipelines.orchestration.ledger.instance import open_instance_folder
from awp_pipelines.orchestration.ledger.lease import leased, tree_pool
from awp_pipelines.orchestration.ledger.liveness import Beat, beating


@pytest.fixture
def instance(tmp_path: Path) -> DagsterInstance:
    opened = open_instance_folder(tmp_path / "home")
    yield opened
    opened.dispose()


def _run(instance: DagsterInstance, status: DagsterRunStatus = DagsterRunStatus.STARTED) -> str:
    return create_run_for_test(instance, job_name="packet__beats", status=status).run_id


def test_a_compute_beats_with_its_host_and_pid_while_it_runs_and_its_beat_goes_when_it_ends(
        instance: DagsterInstance, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWP_HOST_ID", "host-a")
    run_id = _run(instance)
    with beating(ledger_of(instance), run_id, "step_01", "beats", every=0.5) as first:
        assert (first.host, first.pid, first.every) == ("host-a", os.getpid(), 0.5)
        deadline = time.monotonic() + 60  # against a hang only: the thread beats again within 0.5 s
        while [b.at for b in ledger_of(instance).beats()] == [first.at] and time.monotonic() < deadline:
            time.sleep(0.1)
        [later] = ledger_of(instance).beats()
        assert later.at > first.at and later.key == first.key
    assert ledger_of(instance).beats() == []


def test_a_silent_run_is_failed_and_its_slots_freed_a_beating_one_is_not(
        instance: DagsterInstance, monkeypatch: pytest.MonkeyPatch) -> None:
    now = time.time()
    dead, alive, other_packet = (_run(instance) for _ in range(3))
    ended = _run(instance, DagsterRunStatus.SUCCESS)
    stale = now - 60  # bound for a 2 s beat: 4 x 2 + 10 = 18 s
    for run_id, packet, at in ((dead, "beats", stale), (alive, "beats", now - 5), (other_packet, "other", stale),
                               (ended, "beats", stale)):
        ledger_of(instance).beat(Beat(run_id, "step_01", packet, "host-b", 4242, at, 2.0))
    with leased(ledger_of(instance), dead, "step_01", {"tree": "awp_x"}):
        reaped = ledger_of(instance).reap("beats", now=now)
        assert list(reaped) == [dead]
        failed = instance.get_run_by_id(dead)
        assert failed is not None and failed.status == DagsterRunStatus.FAILURE
        assert instance.get_run_by_id(alive).status == DagsterRunStatus.STARTED  # type: ignore[union-attr]
        assert instance.get_run_by_id(other_packet).status == DagsterRunStatus.STARTED  # type: ignore[union-attr]
        # The beats of ended runs are dropped; the live ones, and another packet's, stay for their own judge.
        assert sorted(b.run_id for b in ledger_of(instance).beats()) == sorted([alive, other_packet])
        # Its work tree is free at once, for the retry: no grace as for a run whose worker ended it.
        assert claimed_slots(instance, tree_pool("awp_x")) == []


def test_a_beat_says_how_often_its_writer_beats_so_its_reader_needs_no_setting() -> None:
    beat = Beat("r", "s", "p", host_id(), 1, 1000.0, 15.0)
    assert beat.bound_s == 70.0 and not beat.stale(1070.0) and beat.stale(1070.5)
    assert Beat.parse(beat.dump()) == beat and Beat.parse("not json") is None


def test_in_process_run_config_runs_the_steps_in_the_workers_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Celery workers (and the sensor's one-prompt launches) ask for `in_process`: it was ignored, the
    executor's config being fixed, and a Celery prefork child (daemonic) failed to start step processes."""
    from dagster import InitExecutorContext, job
    from dagster._core.definitions.job_base import InMemoryJob

    @job
    def nothing() -> None:
        pass

    executor_def = parallel_executor()
    create = executor_def.executor_creation_fn
    assert create is not None
    instance = DagsterInstance.ephemeral()

    def context(config: dict) -> InitExecutorContext:  # type: ignore[type-arg]
        # (an in-memory job: no job to build in a forkserver; a real run's job is its ReconstructableJob)
        return InitExecutorContext(job=InMemoryJob(nothing), executor_def=executor_def, executor_config=config,
                                   instance=instance)

    def chosen(config: dict) -> object:  # type: ignore[type-arg]
        made = create(context(config))
        assert isinstance(made, RunBeatingExecutor)  # every choice beats for its run
        return made.inner

    retries = {"enabled": {}}
    assert isinstance(chosen({"in_process": {"retries": retries}}), InProcessExecutor)
    multi = {"max_concurrent": 2, "retries": retries, "start_method": {"forkserver": {}}}
    assert isinstance(chosen({"multiprocess": multi}), MultiprocessExecutor)
    monkeypatch.setattr("multiprocessing.current_process", lambda: SimpleNamespace(daemon=True))
    assert isinstance(chosen({"multiprocess": multi}), InProcessExecutor)


def test_the_housekeeping_sensor_fails_a_silent_run_of_any_packet(tmp_path: Path) -> None:
    """Under the daemon the location's housekeeping tick is the judge (once for every packet): a run whose beat
    went silent is failed, so the recovery sensor launches the retry."""
    from dagster import build_sensor_context

    from awp_pipelines.orchestration.sensors.housekeeping import HOUSEKEEPING

    instance = open_instance_folder(tmp_path / "home")
    try:
        silent = create_run_for_test(instance, job_name="packet__demo", status=DagsterRunStatus.STARTED,
                                     tags={"awp/packet_run": "pr-silent"}).run_id
        ledger_of(instance).beat(Beat(silent, "demo__01", "demo", "host-b", 4242, time.time() - 600, 15.0))
        HOUSEKEEPING.evaluate_tick(build_sensor_context(instance=instance))
        run = instance.get_run_by_id(silent)
        assert run is not None and run.status == DagsterRunStatus.FAILURE
    finally:
        instance.dispose()


def test_a_docker_container_names_itself_by_its_container_id_not_by_the_host_name_it_shares(tmp_path: Path) -> None:
    cid = "ab" * 32
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text(f"612 590 8:1 /var/lib/docker/containers/{cid}/hostname /etc/hostname rw - ext4 /dev/sda1 "
                         "rw\n")
    marker = tmp_path / ".dockerenv"
    assert container_host(marker, mountinfo) is None  # not in a container: the host name alone
    marker.touch()
    assert container_host(marker, mountinfo) == f"{socket.gethostname()}/{cid[:12]}"
    mountinfo.write_text("25 1 8:1 / / rw - ext4 /dev/sda1 rw\n")
    assert container_host(marker, mountinfo) is None
