"""The base for on-disk models: strict (unknown keys are errors) and described (for `awp schema`)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class StrictModel(BaseModel):
    """Unknown keys are errors: Prompt Runner silently dropped them and users lost work to typos."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
