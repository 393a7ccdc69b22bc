"""The Dagster instance `awp run` uses: embedded SQLite under `<packet>/.awp/dagster` unless told otherwise."""

from __future__ import annotations

import os
from pathlib import Path

from dagster import DagsterInstance
from dagster._core.instance.ref import InstanceRef

_EMBEDDED_CONFIG = "telemetry:\n  enabled: false\n"


def instance_home(packet_root: Path, home: Path | None = None) -> Path:
    if home is not None:
        return home
    env = os.environ.get("AWP_DAGSTER_HOME")
    return Path(env) if env else packet_root / ".awp" / "dagster"


def open_instance(packet_root: Path, home: Path | None = None) -> DagsterInstance:
    """A folder with a dagster.yaml (e.g. Postgres storage) is used as it is; an empty one becomes SQLite."""
    folder = instance_home(packet_root, home).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "dagster.yaml"
    if not config.exists():
        config.write_text(_EMBEDDED_CONFIG, encoding="utf-8")
    return DagsterInstance.from_ref(InstanceRef.from_dir(str(folder)))
