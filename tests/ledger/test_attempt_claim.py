"""An Attempt starts once: its id is claimed atomically in the instance (`Ledger.claim_attempt`), so a run worker
started twice (a Celery task redelivered after its visibility timeout) starts no second agent."""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path

import pytest
import sqlalchemy as sa
from dagster import DagsterInstance, DagsterRunStatus
from dagster._core.test_utils import create_run_for_test
from e2e_support import postgres_instance_dir, race_processes

from awp_pipelines.orchestration.ledger import instance_ledger as claims
from awp_pipelines.orchestration.ledger.factory import ledger_of
from awp_pipelines.orchestration.ledger.instance import open_instance_folder
from awp_pipelines.orchestration.ledger.liveness import this_process


def claim_attempt(instance: DagsterInstance, attempt_id: str, run_id: str) -> str | None:
    return ledger_of(instance).claim_attempt(attempt_id, run_id)


def _run(instance: DagsterInstance, status: DagsterRunStatus) -> str:
    return create_run_for_test(instance, job_name="packet__claims", status=status).run_id


def test_a_second_process_of_a_live_run_is_refused_and_names_the_holder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    instance = open_instance_folder(tmp_path / "home")
    try:
        run_id = _run(instance, DagsterRunStatus.STARTED)
        assert claim_attempt(instance, "pr-1.01.a1", run_id) is None
        assert claim_attempt(instance, "pr-1.01.a1", run_id) is None  # the holder asking again: still its own
        first = this_process(run_id)
        # The redelivered task: the same run, another process (here: another pid).
        monkeypatch.setattr(claims, "this_process", lambda rid: f"{rid}:other-host:4242:1")
        assert claim_attempt(instance, "pr-1.01.a1", run_id) == first
        assert claim_attempt(instance, "pr-1.01.a2", run_id) is None  # another Attempt id is free
    finally:
        instance.dispose()


def test_the_claim_of_a_run_that_ended_is_taken_over(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    instance = open_instance_folder(tmp_path / "home")
    try:
        dead = _run(instance, DagsterRunStatus.FAILURE)  # died between its claim and its Attempt's start
        assert claim_attempt(instance, "pr-1.01.a1", dead) is None
        retry = _run(instance, DagsterRunStatus.STARTED)
        monkeypatch.setattr(claims, "this_process", lambda rid: f"{rid}:host-b:7:1")
        assert claim_attempt(instance, "pr-1.01.a1", retry) is None
        monkeypatch.setattr(claims, "this_process", lambda rid: f"{rid}:host-c:8:1")
        assert claim_attempt(instance, "pr-1.01.a1", retry) == f"{retry}:host-b:7:1"
    finally:
        instance.dispose()


def _claim(home: str, run_id: str, start_at: float, answers: multiprocessing.Queue) -> None:
    instance = open_instance_folder(Path(home))
    time.sleep(max(0.0, start_at - time.time()))  # every process claims at the same moment
    answers.put(claim_attempt(instance, "pr-1.01.a1", run_id))
    instance.dispose()


def _race(home: Path) -> None:
    """Four processes (four redelivered workers of one STARTED run) claim one Attempt at the same moment."""
    instance = open_instance_folder(home)
    run_id = _run(instance, DagsterRunStatus.STARTED)
    instance.dispose()
    got = race_processes(_claim, lambda _n, start_at, answers: (str(home), run_id, start_at, answers))
    assert got.count(None) == 1, got
    holders = {g for g in got if g is not None}
    assert len(holders) == 1 and next(iter(holders)).startswith(run_id)


def test_of_four_racing_workers_of_one_run_exactly_one_starts_the_attempt(tmp_path: Path) -> None:
    _race(tmp_path / "home")


@pytest.mark.postgres
def test_of_four_racing_workers_on_postgres_exactly_one_starts_the_attempt(
        tmp_path: Path, fresh_pg_database: sa.URL) -> None:
    _race(postgres_instance_dir(tmp_path / "home", fresh_pg_database))
