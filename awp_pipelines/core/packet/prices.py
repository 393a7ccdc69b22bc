"""Cost from a price table when the provider reports none: a project's own `resources/prices.yaml`, else the
table shipped with the package (`core/packet/prices.yaml`). Pure."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import Field

from awp_pipelines.core.packet.install import PACKAGE_DIR
from awp_pipelines.core.packet.model.base import StrictModel
from awp_pipelines.core.packet.validation import validate_doc
from awp_pipelines.core.packet.yamlsrc import parse_yaml

_PER = 1_000_000
SHIPPED_PRICES = PACKAGE_DIR / "core" / "packet" / "prices.yaml"


class ModelPrice(StrictModel):
    """USD per million tokens. Reasoning tokens are billed as output."""

    input: float = Field(ge=0, description="Uncached input tokens.")
    output: float = Field(ge=0, description="Output tokens, reasoning included.")
    cached_input: float | None = Field(None, ge=0, description="Cache reads; default the input price.")


class PriceTable(StrictModel):
    models: dict[str, ModelPrice] = Field(default_factory=dict, description="Model-name prefix → price.")

    def price_for(self, model: str | None) -> ModelPrice | None:
        if not model:
            return None
        matches = [prefix for prefix in self.models if model.startswith(prefix)]
        return self.models[max(matches, key=len)] if matches else None

    def cost(self, model: str | None, input_tokens: int, output_tokens: int,
             cached_input_tokens: int = 0) -> float | None:
        """The estimated cost, or None for a model the table does not know."""
        price = self.price_for(model)
        if price is None:
            return None
        cached = price.cached_input if price.cached_input is not None else price.input
        # output_tokens already holds the reasoning tokens (the adapters normalise it so).
        return round((input_tokens * price.input + cached_input_tokens * cached
                      + output_tokens * price.output) / _PER, 6)


def default_prices_file() -> Path | None:
    env = os.environ.get("AWP_PRICES")
    if env:
        return Path(env)
    for candidate in (Path.cwd() / "resources" / "prices.yaml", SHIPPED_PRICES):
        if candidate.is_file():
            return candidate
    return None


def load_prices(file: Path | None = None) -> PriceTable:
    file = file or default_prices_file()
    if file is None or not file.is_file():
        return PriceTable()
    doc = parse_yaml(file.read_text(encoding="utf-8"), file)
    return validate_doc(PriceTable, doc) if doc.data is not None else PriceTable()
