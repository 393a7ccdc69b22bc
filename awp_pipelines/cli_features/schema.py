"""JSON Schemas of the on-disk models and of the commands' JSON output, for `awp schema` and editors."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from awp_pipelines.core.engine.status_report import StatusReport
from awp_pipelines.core.packet.home_profile import ProfileSettings
from awp_pipelines.core.packet.model.manifest import Manifest
from awp_pipelines.core.packet.model.prompt import PromptFrontMatter
from awp_pipelines.core.packet.providers_config import Catalog

SCHEMAS: dict[str, type[BaseModel]] = {
    "manifest": Manifest,
    "prompt": PromptFrontMatter,
    "providers": Catalog,
    "profile": ProfileSettings,
    "status": StatusReport,
}
# What a command prints (serialization: computed fields included), shipped as awp_pipelines/schemas/NAME.schema.json.
OUTPUTS = frozenset({"status"})


def schema_for(name: str) -> dict[str, Any]:
    return SCHEMAS[name].model_json_schema(mode="serialization" if name in OUTPUTS else "validation")


def schema_text(name: str) -> str:
    return json.dumps(schema_for(name), indent=2, ensure_ascii=False) + "\n"
