"""Under the daemon no `awp run` reaps a dead Attempt: its run worker is killed, its beat goes silent, the code
location's housekeeping sensor (a tick, as the daemon runs it) marks the run failed and frees its slots, and the
next launch (a sensor's retry, or a UI "Materialize") runs the compute. That compute, holding the work tree's
lease, saves the dead Attempt's partial work as its AgentRun's checkpoint before it edits the tree, and the
retry continues from it: the partial work is neither lost nor committed by another."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from dagster import DagsterRunStatus, build_sensor_context
from reliability.crash import UNFINISHED, checkpoint_refs, commits_per_prompt, event, kill_when, write_packet

from awp_pipelines.core.packet.packet import load_packet
from awp_pipelines.core.packet.providers_config import load_catalog
from awp_pipelines.dagster_compat.pools import slot_holders
from awp_pipelines.orchestration.assets import packet_assets
from awp_pipelines.orchestration.compute.resources import AwpResource
from awp_pipelines.orchestration.ledger.instance import open_instance
from awp_pipelines.orchestration.sensors.housekeeping import HOUSEKEEPING


@pytest.mark.slow
def test_a_launch_after_a_dead_worker_saves_its_partial_work_and_continues_from_it(
        tmp_path: Path, make_git_repo: Callable[[Path], Path]) -> None:
    packet = write_packet(tmp_path / "p", make_git_repo)
    packet_run = kill_when(packet, event("file_written", ".01.a1"),
                           {"AWP_FAULT_PAUSE": "after_agent:30", "AWP_HEARTBEAT_S": "0.5"})  # silent after 12 s
    repo = packet / "workspace"
    assert subprocess.run(["git", "-C", str(repo), "status", "--porcelain"], capture_output=True, text=True,
                          check=True).stdout  # a.txt, written by the dead Attempt

    loaded = load_packet(packet)
    compiled = packet_assets(loaded, load_catalog(None), AwpResource())
    instance = open_instance(packet)
    try:
        deadline = time.monotonic() + 120
        while any(r.status in UNFINISHED for r in instance.get_runs()) and time.monotonic() < deadline:
            HOUSEKEEPING.evaluate_tick(build_sensor_context(instance=instance))  # a tick, as the daemon's
            time.sleep(1)
        [dead] = instance.get_runs()
        assert dead.status == DagsterRunStatus.FAILURE and not slot_holders(instance)
        job = compiled.definitions().resolve_job_def(f"packet__{loaded.name}")
        result = job.execute_in_process(instance=instance, asset_selection=[compiled.binding.key("01")],
                                        tags={"awp/packet_run": packet_run}, raise_on_error=False)
        assert result.dagster_run.status == DagsterRunStatus.SUCCESS
    finally:
        instance.dispose()
    agent_run = f"{packet_run}.01"
    assert checkpoint_refs(repo) == [f"refs/awp/checkpoints/{agent_run}/{agent_run}.a1"]
    log = subprocess.run(["git", "-C", str(repo), "log", "--format=%(trailers:key=AWP-Attempt,valueonly)"],
                         capture_output=True, text=True, check=True).stdout.split()
    assert log == [f"{agent_run}.a2"]  # the retry committed, continuing from the saved work
    assert commits_per_prompt(repo) == {"01": 1}
