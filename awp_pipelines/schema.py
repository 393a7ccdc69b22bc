"""JSON Schemas of the on-disk models, for `awp schema` and editors."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from awp_pipelines.catalog import Catalog
from awp_pipelines.model.manifest import Manifest
from awp_pipelines.model.prompt import PromptFrontMatter
from awp_pipelines.profile import ProfileSettings

SCHEMAS: dict[str, type[BaseModel]] = {
    "manifest": Manifest,
    "prompt": PromptFrontMatter,
    "providers": Catalog,
    "profile": ProfileSettings,
}


def schema_for(name: str) -> dict[str, Any]:
    return SCHEMAS[name].model_json_schema()
