"""The code location: every packet under assets/, the providers of resources/, the automation of sensors/.

`dagster dev -w workspace.yaml` loads this module. AWP_PROJECT_ROOT points it at another project folder.
"""

from __future__ import annotations

import gc
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from dagster import Definitions, ScheduleDefinition

from awp_pipelines.core.packet.automation import load_automation
from awp_pipelines.core.packet.errors import PacketError
from awp_pipelines.core.packet.install import PACKAGE_DIR
from awp_pipelines.core.packet.packet import NATIVE_MANIFEST, PROMPT_RUNNER_MANIFEST, Packet, load_packet
from awp_pipelines.core.packet.providers_config import Catalog, load_catalog
from awp_pipelines.dagster_compat.console_level import default_console_at
from awp_pipelines.orchestration.assets import location_definitions, packet_assets
from awp_pipelines.orchestration.compile.naming import dagster_name
from awp_pipelines.orchestration.compute.resources import AwpResource
from awp_pipelines.orchestration.compute.step_executor import parallel_executor
from awp_pipelines.orchestration.sensors.housekeeping import HOUSEKEEPING

REPO_PACKETS_DIR = "assets"
LOCATION_RESOURCE = "awp"


def project_root() -> Path:
    """AWP_PROJECT_ROOT; else the working directory when it is a project (workspace.yaml's `working_directory`,
    a code server started in the project); else the source checkout around the package; else the working
    directory. An installed wheel has no checkout around it: site-packages is never taken for a project."""
    env = os.environ.get("AWP_PROJECT_ROOT")
    if env:
        return Path(env)
    for candidate in (Path.cwd(), PACKAGE_DIR.parent):
        if (candidate / REPO_PACKETS_DIR).is_dir() or (candidate / "resources" / "providers.yaml").is_file():
            return candidate
    return Path.cwd()


def discover_packets(assets_dir: Path) -> list[Packet]:
    folders = sorted(p for p in assets_dir.iterdir() if p.is_dir()) if assets_dir.is_dir() else []
    return [load_packet(f) for f in folders
            if (f / NATIVE_MANIFEST).is_file() or (f / PROMPT_RUNNER_MANIFEST).is_file()]


@contextmanager
def deferred_full_collections() -> Iterator[None]:
    """No full (generation 2) garbage collection while the block runs; the young generations as usual. A
    load builds objects that live as long as the process, and each full collection walks all of them again
    (200 packets: four full collections, about 0.5 s of a 2.6 s load, for nothing to free)."""
    thresholds = gc.get_threshold()
    gc.set_threshold(thresholds[0], thresholds[1], 1_000_000)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)


CONSOLE_LEVEL_ENV = "AWP_CONSOLE_LOG_LEVEL"


def quiet_console() -> None:
    """Runs log to the console at $AWP_CONSOLE_LOG_LEVEL (`make ui` sets WARNING): a terminal running `dagster dev`
    shows warnings and errors, not every DEBUG event of every run. Their runs name no logger in their run config
    ("Materialize all", the sensors' run requests), so it is Dagster's default console that is set, in each process
    that loads this location (console_level.py); the event log keeps every event. Unset: Dagster's default."""
    level = os.environ.get(CONSOLE_LEVEL_ENV, "").strip().upper()
    if level:
        default_console_at(level)


def _has_prompts(packet: Packet) -> bool:
    """A packet with no prompts yet (just made by `awp packet new`) is left out of the location, said as a warning
    on the console `dagster dev` prints to: it has nothing to show, and must not stop the other packets loading."""
    if not packet.prompts:
        logging.getLogger(__name__).warning("awp: packet %s (%s) has no prompts yet, so it is not in the code location;"
                                            " `awp prompt new %s SLUG` writes one", packet.name, packet.root,
                                            packet.root)
    return bool(packet.prompts)


def build_definitions(root: Path | None = None) -> Definitions:
    with deferred_full_collections():
        return _build(root or project_root())


def _build(root: Path) -> Definitions:
    quiet_console()
    providers_file = root / "resources" / "providers.yaml"
    catalog: Catalog = load_catalog(providers_file if providers_file.is_file() else None)
    # One resource for every packet: they share the project's providers file and the default settings.
    shared = AwpResource().with_catalog(catalog)
    compiled = [packet_assets(p, catalog, shared, resource_name=LOCATION_RESOURCE)
                for p in discover_packets(root / REPO_PACKETS_DIR) if _has_prompts(p)]
    jobs = {c.packet.name: c.job for c in compiled}
    schedules = []
    for spec in load_automation(root / "sensors" / "automation.yaml").schedules:
        if spec.packet not in jobs:
            raise PacketError(root / "sensors" / "automation.yaml", f"schedule names unknown packet '{spec.packet}'",
                              key="schedules.packet", hint=f"known packets: {', '.join(jobs) or 'none'}")
        schedules.append(ScheduleDefinition(name=f"{dagster_name(spec.packet)}_schedule", job=jobs[spec.packet],
                                            cron_schedule=spec.cron, execution_timezone=spec.timezone))
    # One recovery sensor (location_definitions) and one housekeeping sensor (housekeeping.py) for the location,
    # whatever the number of packets.
    # The location's default executor is AWP's, for the jobs Dagster makes itself: "Materialize all" and the
    # asset pages launch `__ASSET_JOB`, which in a Celery prefork worker (a daemonic process) must run its
    # steps in process, as each packet's job does; Dagster's default executor died there starting children.
    defs = Definitions.merge(location_definitions(compiled),
                             Definitions(schedules=schedules, sensors=[HOUSEKEEPING],
                                         executor=parallel_executor()))
    defs.get_repository_def()  # resolved and validated here, as a code server does first (Dagster caches it)
    return defs


defs = build_definitions()
