"""`json`: the file parses as JSON and has the declared shape (root, paths, array rules)."""

from __future__ import annotations

import json
import re
from typing import Any

from awp_pipelines.core.packet.model.contract import ArrayItemsRequire, ArrayNoneMatch, JsonCheck

from ..context import VerifyContext
from .outcome import Outcome, at, open_parsed

_ROOTS = {"object": dict, "map": dict, "array": list, "list": list}
_MISSING = object()


def json_file(entry: JsonCheck, ctx: VerifyContext) -> Outcome:
    parsed = open_parsed(entry, ctx, json.loads, json.JSONDecodeError, "JSON")
    if isinstance(parsed, Outcome):
        return parsed
    where, value = parsed.where, parsed.value

    problems: list[str] = []
    if entry.root is not None and not isinstance(value, _ROOTS[entry.root]):
        problems.append(f"root is not {entry.root}")
    problems += [f"missing path {p}" for p in entry.required_paths if fetch(value, p) is _MISSING]
    problems += [f"empty path {p}" for p in entry.non_empty_paths if _is_empty(fetch(value, p))]
    problems += [msg for rule in entry.array_items_require if (msg := _items_problem(value, rule))]
    problems += [msg for rule in entry.array_none_match if (msg := _none_match_problem(value, rule))]
    return at(where, not problems, *(problems or ["shape ok"]))


def fetch(value: Any, dotted: str) -> Any:
    """The value at a dotted path (`a.b.0`; digits index arrays; `` is the root), or _MISSING."""
    for segment in (s for s in dotted.split(".") if s):
        if isinstance(value, dict) and segment in value:
            value = value[segment]
        elif isinstance(value, list) and segment.isdigit() and int(segment) < len(value):
            value = value[int(segment)]
        else:
            return _MISSING
    return value


def _is_empty(value: Any) -> bool:
    return value is _MISSING or value is None or (isinstance(value, str | list | dict) and len(value) == 0)


def _items_problem(value: Any, rule: ArrayItemsRequire) -> str:
    items = fetch(value, rule.path)
    if not isinstance(items, list):
        return f"{rule.path or '(root)'} is not an array"
    bad = [item for item in items if not (isinstance(item, dict) and all(k in item for k in rule.keys))]
    if not bad:
        return ""
    return f"{rule.path or '(root)'} has {len(bad)} item(s) missing required keys ({', '.join(rule.keys)})"


def _none_match_problem(value: Any, rule: ArrayNoneMatch) -> str:
    items = fetch(value, rule.path)
    if not isinstance(items, list):
        return ""  # nothing to match, as in Prompt Runner
    hits = sum(1 for item in items if isinstance(item, dict) and rule.field in item and _hit(item[rule.field], rule))
    if not hits:
        return ""
    wanted = f"matching /{rule.pattern}/" if "pattern" in rule.model_fields_set else f"= {rule.equals!r}"
    return f"{rule.path or '(root)'} has {hits} item(s) with {rule.field} {wanted}"


def _hit(field_value: Any, rule: ArrayNoneMatch) -> bool:
    if "pattern" in rule.model_fields_set and rule.pattern is not None:
        text = field_value if isinstance(field_value, str) else json.dumps(field_value)
        return re.search(rule.pattern, text) is not None
    return field_value == rule.equals
