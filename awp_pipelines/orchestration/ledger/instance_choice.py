"""Which Dagster instance a reading command (`awp status`, `awp watch`) reads, and why, said on its first line.

`--instance` (or AWP_DAGSTER_HOME) first; else DAGSTER_HOME, the `dagster` CLI's variable, when it holds an
instance (its dagster.yaml, or the history an instance without one keeps): on a deployment's hosts that is
where the runs are; else the packet's embedded instance (`<packet>/.awp/dagster`, where `awp run` stores
them). A DAGSTER_HOME passed over is named in the line, so no read is silently of another instance."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from awp_pipelines.orchestration.ledger.instance import instance_home

_INSTANCE_FILES = ("dagster.yaml", "history")


@dataclass(frozen=True)
class ChosenInstance:
    home: Path
    why: str

    def line(self) -> str:
        return f"instance: {self.home} ({self.why})"


def instance_to_read(packet_root: Path, explicit: Path | None) -> ChosenInstance:
    if explicit is not None:
        return ChosenInstance(explicit, "--instance or AWP_DAGSTER_HOME")
    dagster_home = os.environ.get("DAGSTER_HOME", "").strip()
    if dagster_home and any((Path(dagster_home) / name).exists() for name in _INSTANCE_FILES):
        return ChosenInstance(Path(dagster_home), "DAGSTER_HOME, as the dagster CLI reads it")
    embedded = instance_home(packet_root)
    if dagster_home:
        return ChosenInstance(embedded, f"the packet's embedded instance: DAGSTER_HOME={dagster_home} holds none")
    return ChosenInstance(embedded, "the packet's embedded instance; DAGSTER_HOME is not set")
