"""One liveness rule for every view (orchestration/ledger/liveness.py): a run Dagster says has not ended, whose
driver is gone (its `awp run` process died, or its every beat is past its bound), counts as ended in the packet
run's history, so status, watch and the page read its Attempt `interrupted` at once, before any rerun."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from dagster import AssetKey, DagsterInstance, DagsterRunStatus
from dagster._core.test_utils import create_run_for_test
from ledger.support import dead_runner

from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.dagster_compat.kvs import kv_set
from awp_pipelines.orchestration.ledger.factory import ledger_of
from awp_pipelines.orchestration.ledger.instance import open_instance_folder
from awp_pipelines.orchestration.ledger.liveness import Beat

KEYS = {AssetKey(["live", "p01"]): "01"}


@pytest.fixture
def instance(tmp_path: Path) -> Iterator[DagsterInstance]:
    opened = open_instance_folder(tmp_path / "home")
    yield opened
    opened.dispose()


def _run(instance: DagsterInstance, status: DagsterRunStatus = DagsterRunStatus.STARTED) -> str:
    return create_run_for_test(instance, job_name="live__job", status=status,
                               tags={tags.PACKET_RUN: "pr-live"}).run_id



def test_a_run_whose_awp_run_process_died_is_gone_and_ended_in_the_history(instance: DagsterInstance) -> None:
    killed, driven, waiting = _run(instance), _run(instance), _run(instance, DagsterRunStatus.NOT_STARTED)
    kv_set(instance, {tags.RUNNER_KEY + killed: dead_runner()})
    ledger_of(instance).note_runner(driven)  # this process: alive
    history = ledger_of(instance).history("pr-live", KEYS)
    assert set(history.gone) == {killed} and "is gone" in history.gone[killed]
    # Every reader counts it ended (its Attempt: interrupted), and only it: the others are still unfinished.
    assert killed in history.finished_runs()
    assert {r.run_id for r in history.unfinished_runs()} == {driven, waiting}
    assert history.busy(KEYS) == {"01"}  # `driven` and `waiting` still hold the prompt


def test_a_run_whose_every_beat_is_past_its_bound_is_gone_one_with_a_fresh_beat_is_not(
        instance: DagsterInstance) -> None:
    now = time.time()
    silent, beating, ended = _run(instance), _run(instance), _run(instance, DagsterRunStatus.SUCCESS)
    for run_id, step, at in ((silent, "step_01", now - 60), (silent, "(run)", now - 40),
                             (beating, "step_01", now - 60), (beating, "(run)", now - 1), (ended, "(run)", now - 60)):
        ledger_of(instance).beat(Beat(run_id, step, "live", "host-b", 4242, at, 2.0))  # bound: 4 x 2 + 10 = 18 s
    gone = ledger_of(instance).history("pr-live", KEYS).gone
    # Its newest beat is what it is judged by (40 s, a second more on a slow machine), not its oldest.
    assert set(gone) == {silent} and re.search(r"has not beaten for 4[01] s \(bound 18 s\)", gone[silent])


def test_a_run_with_no_runner_and_no_beat_is_judged_by_its_status_alone(instance: DagsterInstance) -> None:
    _run(instance)
    assert ledger_of(instance).history("pr-live", KEYS).gone == {}
