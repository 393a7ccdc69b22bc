"""`yaml`: the file parses (safe loader) and has the expected root type."""

from __future__ import annotations

from typing import Any

import yaml

from awp_pipelines.core.packet.model.contract import YamlCheck

from ..context import VerifyContext
from .outcome import Outcome, at, open_parsed


def yaml_file(entry: YamlCheck, ctx: VerifyContext) -> Outcome:
    parsed = open_parsed(entry, ctx, yaml.safe_load, yaml.YAMLError, "YAML")
    if isinstance(parsed, Outcome):
        return parsed
    where, value = parsed.where, parsed.value
    root = root_type(value)
    if entry.root is not None and entry.root != root:
        return at(where, False, f"expected root {entry.root}, got {root}")
    return at(where, True, f"parses; root is {root}")


def root_type(value: Any) -> str:
    if isinstance(value, dict):
        return "map"
    return "list" if isinstance(value, list) else "scalar"
