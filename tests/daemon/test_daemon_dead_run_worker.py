"""A run worker lost with its host before its first compute, under the real daemon and the default run launcher
(which has no health check for Dagster's run monitoring to ask): the run's steps wait for their work tree's pool,
held by another run, so no compute beats yet. Only the run worker's own beat (step_executor.py) tells the
housekeeping sensor that this STARTED run is dead: it is failed and its pool entries freed, and the other run
keeps its slot."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from dagster import DagsterEventType, DagsterInstance, DagsterRunStatus
from dagster._core.test_utils import create_run_for_test
from deployment import REPO_ROOT, Deployment, deployment, embedded_home, make_project

from awp_pipelines.core.packet.packet import load_packet
from awp_pipelines.dagster_compat.pools import claim_slot, ensure_pool, slot_holders
from awp_pipelines.orchestration.compile.translator import load_translator
from awp_pipelines.orchestration.ledger.factory import ledger_of
from awp_pipelines.orchestration.ledger.liveness import RUN_STEP, Beat

pytestmark = pytest.mark.slow


@pytest.fixture
def running(tmp_path: Path) -> Iterator[Deployment]:
    project = make_project(tmp_path / "project", {"demo": REPO_ROOT / "assets" / "demo"})
    subprocess.run(["bash", str(project / "assets" / "demo" / "setup.sh")], check=True, capture_output=True)
    # Beats every 0.5 s: a silent run worker is judged after 4 x 0.5 + 10 = 12 s.
    with deployment(embedded_home(tmp_path / "home"), project, {"AWP_HEARTBEAT_S": "0.5"}) as dep:
        yield dep


def _run_beat(instance: DagsterInstance, holder: str) -> Beat | None:
    return next((b for b in ledger_of(instance).beats() if b.step == RUN_STEP and b.run_id != holder), None)


def _blocked_worker(instance: DagsterInstance, run_id: str) -> int | None:
    """The run worker's pid once the run reports a step blocked by a pool limit (Dagster's engine events)."""
    engine = [e.dagster_event.engine_event_data.metadata  # type: ignore[union-attr]
              for e in instance.all_logs(run_id, of_type=DagsterEventType.ENGINE_EVENT)]
    pids = [int(m["pid"].value) for m in engine if "pid" in m]  # type: ignore[arg-type]
    return pids[0] if pids and any("pool" in m for m in engine) else None


def test_a_run_worker_killed_while_its_steps_wait_for_a_pool_is_failed_by_housekeeping(running: Deployment) -> None:
    packet = load_packet(running.project / "assets" / "demo")
    pool = load_translator(None).get_pool(packet, packet.prompts[0])  # the work tree's op pool (limit 1)
    with running.instance() as instance:
        holder = create_run_for_test(instance, job_name="packet__other", status=DagsterRunStatus.STARTED).run_id
        ensure_pool(instance, pool)
        assert claim_slot(instance, pool, holder, "other__step")
    run_id = running.launch_job("packet__demo")
    running.wait_until(lambda i: _blocked_worker(i, run_id) is not None, 180, "the run's step blocked by the pool")
    with running.instance() as instance:
        worker = _blocked_worker(instance, run_id)
        assert worker is not None
        # No compute beats: only the run worker's own, if any.
        assert [b.step for b in ledger_of(instance).beats() if b.run_id == run_id] in ([], [RUN_STEP])
        run = instance.get_run_by_id(run_id)
        assert run is not None and run.status == DagsterRunStatus.STARTED
    # The host is lost: the code server that started the run worker (`dagster api execute_run`) and would report
    # its death goes with it. (The run worker killed alone is reported by that code server: Dagster's own work.)
    code_server = int(Path(f"/proc/{worker}/stat").read_text().rsplit(")", 1)[1].split()[1])
    for pid in (code_server, worker):
        os.kill(pid, signal.SIGKILL)
    running.wait_until(lambda i: i.get_run_by_id(run_id).status == DagsterRunStatus.FAILURE  # type: ignore[union-attr]
                       and run_id not in slot_holders(i), 180, "the housekeeping sensor to fail the silent run")
    with running.instance() as instance:
        [failure] = instance.all_logs(run_id, of_type=DagsterEventType.RUN_FAILURE)
        message = failure.dagster_event.message or ""  # type: ignore[union-attr]
        assert f"pid {worker}" in message and "has not beaten" in message
        assert holder in slot_holders(instance)  # the other run keeps its slot
        assert _run_beat(instance, holder) is None  # the dead run's beat is dropped with it
