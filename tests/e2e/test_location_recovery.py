"""One recovery sensor per code location (issue 25): a location of several packets has one `awp_recovery`
sensor, and one tick of it launches each packet's due repairs and retries as runs of that packet's own job,
reading the runs that ended once for all packets."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from dagster import AssetKey, build_sensor_context
from e2e_support import decided_launch
from housekeeping_support import counted_queries

from awp_pipelines.orchestration.definitions import build_definitions
from awp_pipelines.orchestration.ledger.instance import open_instance_folder

REPO_ROOT = Path(__file__).resolve().parents[2]
PACKETS = ("alpha", "beta", "gamma")  # gamma never runs: nothing of it is read or launched
KEYS = {"02": "02_write_changelog", "03": "03_write_status_report"}


def _project(root: Path) -> Path:
    """A project whose assets/ holds the demo three times under other names, each with its workspace."""
    for name in PACKETS:
        folder = root / "assets" / name
        shutil.copytree(REPO_ROOT / "assets" / "demo", folder, ignore=shutil.ignore_patterns("workspace", ".awp"))
        manifest = folder / "packet.yaml"
        manifest.write_text(manifest.read_text().replace("name: demo", f"name: {name}", 1))
        subprocess.run(["bash", str(folder / "setup.sh")], check=True, capture_output=True)
    return root


def test_one_sensor_launches_each_packets_due_repair_and_retry_as_its_own_jobs_runs(tmp_path: Path) -> None:
    defs = build_definitions(_project(tmp_path / "project"))
    [sensor] = [s for s in defs.sensors if "recovery" in s.name]
    assert sensor.name == "awp_recovery"
    assert "3 packet(s): alpha, beta, gamma" in (sensor.description or "")
    instance = open_instance_folder(tmp_path / "instance")
    try:
        first = {name: defs.resolve_job_def(f"packet__{name}").execute_in_process(
            instance=instance, raise_on_error=False).run_id for name in PACKETS[:2]}
        with counted_queries() as seen:
            tick = sensor.evaluate_tick(build_sensor_context(instance=instance, definitions=defs))
        again = sensor.evaluate_tick(build_sensor_context(instance=instance, definitions=defs, cursor=tick.cursor))
    finally:
        instance.dispose()
    # The demo's 02 misses a verifier item (a repair) and 03 is rate limited (a retry): in both packets at once.
    launched = {(r.job_name, decided_launch(r)[:2], r.run_key) for r in tick.run_requests}
    assert launched == {(f"packet__{name}", (prompt, mode), f"pr-{first[name][:8]}.{prompt}.a2")
                        for name in PACKETS[:2] for prompt, mode in (("02", "repair"), ("03", "retry"))}
    for request in tick.run_requests:
        name = (request.job_name or "").removeprefix("packet__")
        assert request.tags["awp/packet_run"] == f"pr-{first[name][:8]}"
        assert request.asset_selection == [AssetKey([name, KEYS[decided_launch(request)[0]]])]
        assert request.tags["dagster/parent_run_id"] == first[name]
        # The request's job holds its asset: Dagster would launch it as a run of that packet's job.
        job = defs.resolve_job_def(request.job_name or "")
        assert request.asset_selection[0] in job.asset_layer.executable_asset_keys
    # One read of the runs that ended serves every packet.
    assert sum(1 for s in seen if "FROM runs" in s and "runs.update_timestamp >" in s) == 1
    assert again.run_requests == []  # the cursor moved past both packets' runs
