"""`sensors/automation.yaml`: which packet jobs run on which schedule (pure model)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from awp_pipelines.core.packet.model.base import StrictModel
from awp_pipelines.core.packet.validation import validate_doc
from awp_pipelines.core.packet.yamlsrc import parse_yaml


class ScheduleSpec(StrictModel):
    packet: str = Field(description="Packet name (its job is packet__<name>).")
    cron: str = Field(description="Cron expression.")
    timezone: str = Field("UTC", description="IANA timezone of the cron expression.")


class AutomationConfig(StrictModel):
    schedules: list[ScheduleSpec] = Field(default_factory=list, description="Packet schedules.")


def load_automation(file: Path) -> AutomationConfig:
    if not file.is_file():
        return AutomationConfig()
    doc = parse_yaml(file.read_text(encoding="utf-8"), file)
    if doc.data is None:
        return AutomationConfig()
    return validate_doc(AutomationConfig, doc)
