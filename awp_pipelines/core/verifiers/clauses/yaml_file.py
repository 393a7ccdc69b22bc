"""`yaml`: the file parses (safe loader) and has the expected root type."""

from __future__ import annotations

from typing import Any

import yaml

from awp_pipelines.core.packet.model.contract import YamlCheck

from ..context import VerifyContext
from .outcome import Outcome, at, open_text


def yaml_file(entry: YamlCheck, ctx: VerifyContext) -> Outcome:
    opened = open_text(entry, ctx)
    if isinstance(opened, Outcome):
        return opened
    where, content = opened.where, opened.text
    try:
        value = yaml.safe_load(content)
    except yaml.YAMLError as exc:
        return at(where, False, f"YAML parse failed: {' '.join(str(exc).split())}")
    root = root_type(value)
    if entry.root is not None and entry.root != root:
        return at(where, False, f"expected root {entry.root}, got {root}")
    return at(where, True, f"parses; root is {root}")


def root_type(value: Any) -> str:
    if isinstance(value, dict):
        return "map"
    return "list" if isinstance(value, list) else "scalar"
