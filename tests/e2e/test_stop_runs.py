"""`awp resume` end to end: a stopped packet run of the demo (real Dagster runs on its embedded instance) is shown
stopped, lifted, and completed in process. The sensor's side of a stop (nothing launched until a resume, a run
cancelled by the user stops its packet run) runs under the real sensor and compute on a `MemoryLedger`:
tests/ledger/test_scenarios_on_memory.py."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
from pathlib import Path

from awp_pipelines.core.decisions.stops import StopMarker
from awp_pipelines.core.packet.packet import load_packet
from awp_pipelines.core.packet.providers_config import BUILTIN
from awp_pipelines.orchestration.assets import CompiledPacket, packet_assets
from awp_pipelines.orchestration.compute.resources import AwpResource
from awp_pipelines.orchestration.ledger.factory import ledger_of

REPO_ROOT = Path(__file__).resolve().parents[2]


def _demo(tmp_path: Path) -> CompiledPacket:
    demo = tmp_path / "demo"
    shutil.copytree(REPO_ROOT / "assets" / "demo", demo, ignore=shutil.ignore_patterns("workspace", ".awp"))
    subprocess.run(["bash", str(demo / "setup.sh")], check=True, capture_output=True)
    return packet_assets(load_packet(demo), BUILTIN, AwpResource())


def test_awp_resume_lifts_the_stop_and_goes_on_with_the_packet_run(tmp_path: Path) -> None:
    from e2e_support import awp

    from awp_pipelines.orchestration.ledger.instance import open_instance

    packet = _demo(tmp_path).packet
    first = awp("run", packet.root, "--no-recovery", "--json")
    assert first.exit_code == 1, first.output
    packet_run = json.loads(first.output)["packet_run"]
    instance = open_instance(packet.root)
    try:
        ledger_of(instance).stop(packet_run, StopMarker.from_signal(signal.SIGTERM, 1.0, "awp run was stopped"))
    finally:
        instance.dispose()
    status = awp("status", packet.root)
    assert f"packet run {packet_run} · stopped (resumable: 2 prompts)" in status.output, status.output
    lifted = awp("resume", packet.root, "--lift-only")
    assert lifted.exit_code == 0 and f"packet run {packet_run} resumed (it was stopped by SIGTERM" in lifted.output
    assert "· running ·" in awp("status", packet.root).output  # no stop: its retries and repairs are due
    resumed = awp("resume", packet.root, "--packet-run", packet_run)
    assert resumed.exit_code == 0, resumed.output
    assert f"3/3 prompts done (packet run {packet_run})" in resumed.output
