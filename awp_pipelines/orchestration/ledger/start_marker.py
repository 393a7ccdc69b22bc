"""An Attempt's start marker as the event log stores it: the page link (a URL entry, first: the asset page opens
the running Attempt in one click) and the rest as one JSON entry (`awp/started`). Dagster stores each metadata
entry of an observation with ~110 bytes of envelope, so ten entries cost about 1.1 KiB more per Attempt than one.
Readers see every marker flat, as it was stored before (`awp/event: attempt_started`, `awp/mode`, …), whichever
form an instance holds."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dagster import MetadataValue

from awp_pipelines.core.records import run_tags as tags

ATTEMPT_STARTED = "attempt_started"


def marker_metadata(marker: Mapping[str, object]) -> dict[str, Any]:
    """The stored metadata of a flat marker (tag names → values; `None` and empty values left out)."""
    fields = {name.removeprefix(tags.PREFIX): getattr(value, "value", value) for name, value in marker.items()
              if name not in (tags.PAGE, tags.EVENT) and value not in (None, "")}
    page = getattr(marker.get(tags.PAGE), "value", marker.get(tags.PAGE))
    return {**({tags.PAGE: MetadataValue.url(str(page))} if page else {}), tags.STARTED: MetadataValue.json(fields)}


def flat(meta: Mapping[str, Any]) -> dict[str, Any]:
    """Stored metadata (plain values) with a start marker's JSON entry spread out as the flat fields readers
    read; anything else as it is."""
    started = meta.get(tags.STARTED)
    if not isinstance(started, dict):
        return dict(meta)
    rest = {k: v for k, v in meta.items() if k != tags.STARTED}
    return {**rest, tags.EVENT: ATTEMPT_STARTED, **{f"{tags.PREFIX}{name}": v for name, v in started.items()}}
