"""A DAG packet in parallel under a real deployment (webserver + daemon, the embedded SQLite instance): the
packet's job, launched as "Materialize all" launches it, runs independent prompts on disjoint repos at the same
time and never two on one repo. Proved from the stored step start and end events, not from a clock here."""

from __future__ import annotations

from pathlib import Path

import pytest
from dag_packets import write_dag_packet
from dagster import DagsterEventType, DagsterInstance
from deployment import deployment, embedded_home, make_project
from e2e_support import runs_of_packet

pytestmark = pytest.mark.slow
FINISHED = {"SUCCESS", "FAILURE", "CANCELED"}


def _spans(instance: DagsterInstance) -> dict[str, tuple[float, float]]:
    [run] = runs_of_packet(instance, "dag")
    starts: dict[str, float] = {}
    spans = {}
    kinds = {DagsterEventType.STEP_START, DagsterEventType.STEP_SUCCESS, DagsterEventType.STEP_FAILURE}
    for entry in instance.all_logs(run.run_id, of_type=kinds):
        prompt = (entry.step_key or "").split("__")[-1].split("_")[0]
        if entry.dagster_event.event_type == DagsterEventType.STEP_START:
            starts[prompt] = entry.timestamp
        else:
            spans[prompt] = (starts[prompt], entry.timestamp)
    return spans


def _overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def test_the_daemon_runs_independent_prompts_on_disjoint_repos_at_once_and_one_repo_one_at_a_time(
        tmp_path: Path) -> None:
    # Three repos, three prompts on them at once (more than the 2 CPUs here: Dagster's default would allow 2),
    # and 04 on repo a after 01.
    source = write_dag_packet(tmp_path / "src" / "dag", {"01": "a", "02": "b", "03": "c", "04": "a"}, delay_ms=6000)
    project = make_project(tmp_path / "project", {"dag": source})
    home = embedded_home(project / "assets" / "dag" / ".awp" / "dagster")
    with deployment(home, project) as dep:
        dep.launch_job("packet__dag")
        dep.wait_until(lambda i: any(r.status.value in FINISHED for r in runs_of_packet(i, "dag")), 300,
                       "the packet run to finish")
        with dep.instance() as instance:
            [run] = runs_of_packet(instance, "dag")
            assert run.status.value == "SUCCESS"
            spans = _spans(instance)
    assert set(spans) == {"01", "02", "03", "04"}
    assert not _overlap(spans["01"], spans["04"])  # one work tree: one agent at a time
    # Some moment had three agents at work: either of repo a's prompts with b's and c's.
    assert any(max(spans[p][0] for p in trio) < min(spans[p][1] for p in trio)
               for trio in (("01", "02", "03"), ("04", "02", "03")))
