"""The op config schema of every prompt asset, inferred once (a subclass of Dagster's private schema class, or a
plain mapping without it)."""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from typing import Any

from dagster import Config, Field


def shared_config_schema(config: type[Config]) -> Mapping[str, Field]:
    """The op config schema Dagster infers from an argument `config: <Config class>`, inferred once for many
    assets. `multi_asset` takes a mapping of fields and converts it into a schema again for each asset (for a
    code location of 2,000 prompts, a tenth of its load); a subclass of Dagster's private schema class that is
    also that mapping makes Dagster keep it as it is. Without that class (renamed upstream) the plain mapping
    serves, converted per asset as Dagster does by default: slower to load, the same definitions."""
    fields = config.to_fields_dict()
    shared = _shared_schema_class()
    return shared(config.to_config_schema().as_field(), fields) if shared is not None else dict(fields)


@functools.cache
def _shared_schema_class() -> type[Any] | None:
    try:
        from dagster._core.definitions.definition_config_schema import DefinitionConfigSchema
    except ImportError:
        return None

    class SharedConfigSchema(DefinitionConfigSchema, Mapping[str, Field]):
        def __init__(self, field: Field, fields: Mapping[str, Field]) -> None:
            super().__init__(field)
            self._fields = fields

        def __getitem__(self, name: str) -> Field:
            return self._fields[name]

        def __iter__(self) -> Iterator[str]:
            return iter(self._fields)

        def __len__(self) -> int:
            return len(self._fields)

    return SharedConfigSchema
