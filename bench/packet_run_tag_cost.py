"""What the packet run's tag written at each Attempt's start costs (issue 26 item 4), on copies of the demo.

    .venv/bin/python bench/packet_run_tag_cost.py [--repeat N]

Runs the demo packet's job in process N times on a fresh embedded SQLite instance (3 prompts: one completes,
two fail and wait for their repair and retry) and times each call of `tag_root_run(..., running=...)` (the
history it reuses, the runs query, the tag write), beside the wall time of a prompt's step in the same runs.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import awp_pipelines.orchestration.compute.attempt_compute as attempt_compute
from awp_pipelines.core.packet.packet import load_packet
from awp_pipelines.core.packet.providers_config import load_catalog
from awp_pipelines.orchestration.assets import packet_assets
from awp_pipelines.orchestration.instance import open_instance_folder
from awp_pipelines.orchestration.naming import job_name

REPO = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    writes: list[float] = []
    real = attempt_compute.tag_root_run

    def timed(*a: Any, **k: Any) -> None:
        start = time.perf_counter()
        real(*a, **k)
        writes.append(time.perf_counter() - start)

    attempt_compute.tag_root_run = timed  # only the start-time call goes through this module's name
    steps = []
    for _ in range(args.repeat):
        base = Path(tempfile.mkdtemp())
        shutil.copytree(REPO / "assets" / "demo", base / "demo", ignore=shutil.ignore_patterns("workspace", ".awp"))
        subprocess.run(["bash", str(base / "demo" / "setup.sh")], check=True, capture_output=True)
        compiled = packet_assets(load_packet(base / "demo"), load_catalog(REPO / "resources" / "providers.yaml"))
        instance = open_instance_folder(base / "home")
        job = compiled.definitions().resolve_job_def(job_name(compiled.packet))
        start = time.perf_counter()
        job.execute_in_process(instance=instance, raise_on_error=False)
        steps.append((time.perf_counter() - start) / len(compiled.packet.prompts))
        instance.dispose()
        shutil.rmtree(base)
    print(f"start-time tag: {len(writes)} calls, median {statistics.median(writes) * 1000:.1f} ms, "
          f"max {max(writes) * 1000:.1f} ms; a prompt's step (wall, same runs): median "
          f"{statistics.median(steps) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
