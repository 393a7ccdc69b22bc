"""The demo's first run as "Materialize all" makes it, in process and with no daemon: 01 completes, 02 misses a
verifier item (its repair is next) and 03 meets a rate limit (its retry is next); nothing launches them, so the
UI holds that moment. Shared by the browser tests that look at it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from awp_pipelines.core.packet.packet import load_packet
from awp_pipelines.core.packet.providers_config import load_catalog
from awp_pipelines.orchestration.assets import packet_assets
from awp_pipelines.orchestration.compile.naming import job_name
from awp_pipelines.orchestration.ledger.instance import open_instance_folder

REPO_ROOT = Path(__file__).resolve().parents[2]


def demo_project(base: Path) -> Path:
    """A project folder: assets/demo (a copy, its workspace repo made by its own setup.sh) and resources/."""
    project = base / "project"
    shutil.copytree(REPO_ROOT / "assets" / "demo", project / "assets" / "demo",
                    ignore=shutil.ignore_patterns("workspace", ".awp"))
    shutil.copytree(REPO_ROOT / "resources", project / "resources")
    subprocess.run(["bash", str(project / "assets" / "demo" / "setup.sh")], check=True, capture_output=True)
    return project


def demo_run_without_daemon(base: Path, home: Path) -> tuple[Path, str]:
    """The demo's project (demo_project) and one in-process run of its job."""
    project = demo_project(base)
    packet = project / "assets" / "demo"
    compiled = packet_assets(load_packet(packet), load_catalog(project / "resources" / "providers.yaml"))
    instance = open_instance_folder(home)
    try:
        job = compiled.definitions().resolve_job_def(job_name(compiled.packet))
        result = job.execute_in_process(instance=instance, raise_on_error=False)
    finally:
        instance.dispose()
    assert not result.success  # 02 and 03 did not complete: the run is red, as in the UI
    (home / ".nux").mkdir(exist_ok=True)
    (home / ".nux" / "nux.yaml").write_text("seen: 1\n")  # no "Join the Dagster community" modal
    return project, result.run_id
