"""A run of `__ASSET_JOB` ("Materialize all" on the lineage page, launched as the UI launches it) that ends before
its first compute, under a real dagster-daemon and webserver: it carries no AWP tag (its compute adds them), yet the
recovery sensor recognises it by its asset selection, tags it as its compute would have, and launches its
prompts in its packet run, as it does for a tagged run that ended with its prompts not started."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml
from dagster import DagsterRunStatus
from deployment import all_finished, deployment, embedded_home, init_workspaces, make_project
from e2e_support import decided_launch

from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.orchestration.ledger.factory import ledger_of

pytestmark = pytest.mark.slow


def _project(tmp_path: Path) -> Path:
    """Packet `early`: 01 writes one.txt, 02 two.txt (after 01)."""
    src = tmp_path / "src" / "early"
    (src / "prompts").mkdir(parents=True)
    (src / "packet.yaml").write_text(yaml.safe_dump({
        "name": "early", "provider": "simulated", "repos": {"app": {"path": "./workspace", "default": True}}}))
    for name, file in (("01_one", "one.txt"), ("02_two", "two.txt")):
        front = {"verify": {"files_exist": [file]}, "simulate": {"attempts": [{"writes": [{"path": file,
                                                                                            "text": "1"}]}]}}
        (src / "prompts" / f"{name}.prompt.md").write_text(f"---\n{yaml.safe_dump(front)}---\nWork.\n")
    project = make_project(tmp_path / "project", {"early": src})
    init_workspaces(project, ["early"])
    return project


def test_a_materialize_all_run_that_dies_before_its_first_compute_is_recovered_in_its_packet_run(
        tmp_path: Path) -> None:
    project = _project(tmp_path)
    providers = project / "resources" / "providers.yaml"
    with deployment(embedded_home(tmp_path / "home"), project) as dep:
        # The servers have loaded the code; the run worker loads it again from disk: a providers file broken
        # meanwhile makes the run fail at its start, before any compute (as a worker lost before it would).
        providers.write_text("accounts: [unclosed\n")
        first = dep.materialize_all("early")
        with dep.instance() as instance:
            deadline = time.monotonic() + 180
            while (run := instance.get_run_by_id(first)) is None or not run.is_finished:
                assert time.monotonic() < deadline, "the run did not end"
                time.sleep(0.2)
            providers.unlink()  # mended at once: the recovery's runs load it
            assert run.status == DagsterRunStatus.FAILURE
            assert not [k for k in run.tags if k.startswith(tags.PREFIX)], run.tags  # no compute tagged it
            assert not instance.fetch_materializations(next(iter(run.asset_selection or ())), limit=1).records

        packet_run = f"pr-{first[:8]}"

        def completed(instance) -> bool:  # noqa: ANN001
            runs = ledger_of(instance).attempt_log(packet_run).runs
            done = {decided_launch(r)[0] for r in runs if r.status == DagsterRunStatus.SUCCESS and r.run_id != first}
            return all_finished(instance, runs) and done == {"01", "02"}

        dep.wait_until(completed, 300, f"the sensor to complete packet run {packet_run}")
        with dep.instance() as instance:
            claimed = instance.get_run_by_id(first)
            recovery = ledger_of(instance).attempt_log(packet_run).runs
    assert claimed is not None
    assert claimed.tags[tags.PACKET_RUN] == packet_run
    assert len(recovery) == 3  # the UI's run, then one launch per prompt it held
    assert (project / "assets" / "early" / "workspace" / "two.txt").is_file()
