"""yaml and json: parsing, root types and the declarative shape rules."""

from __future__ import annotations

import json
from typing import Any

import pytest
from verify_helpers import Workspace


def test_yaml_passes_with_the_expected_root(ws: Workspace) -> None:
    ws.write("config.yml", "a: 1\nb: [2]\n")
    ws.write("list.yml", "- 1\n- 2\n")
    report = ws.verify({"yaml": [{"path": "config.yml", "root": "map"}, {"path": "list.yml", "root": "list"}]})
    assert [item.passed for item in report.items] == [True, True]


def test_yaml_fails_on_another_root_type(ws: Workspace) -> None:
    ws.write("config.yml", "- 1\n")
    item = ws.item({"yaml": [{"path": "config.yml", "root": "map"}]})
    assert item.details == ["expected root map, got list"]


def test_yaml_fails_on_a_parse_error(ws: Workspace) -> None:
    ws.write("config.yml", "a: [1\n")
    item = ws.item({"yaml": [{"path": "config.yml"}]})
    assert not item.passed and item.details[0].startswith("YAML parse failed")


def test_yaml_does_not_construct_python_objects(ws: Workspace) -> None:
    ws.write("evil.yml", "!!python/object/apply:os.system ['true']\n")
    assert not ws.item({"yaml": [{"path": "evil.yml"}]}).passed


DOC = {
    "name": "demo",
    "empty": "",
    "items": [{"id": 1, "state": "done"}, {"id": 2, "state": "open", "owner": None}],
    "meta": {"tags": ["a"]},
}


def _json(ws: Workspace, rule: dict[str, Any], doc: Any = DOC):
    ws.write("data.json", json.dumps(doc))
    return ws.item({"json": [{"path": "data.json", **rule}]})


@pytest.mark.parametrize("root", ["object", "map"])
def test_json_root_object_accepts_both_spellings(ws: Workspace, root: str) -> None:
    assert _json(ws, {"root": root}).passed
    assert _json(ws, {"root": root}, doc=[1]).details == [f"root is not {root}"]


@pytest.mark.parametrize("root", ["array", "list"])
def test_json_root_array_accepts_both_spellings(ws: Workspace, root: str) -> None:
    assert _json(ws, {"root": root}, doc=[1]).passed
    assert not _json(ws, {"root": root}).passed


def test_json_required_paths_walk_objects_and_array_indexes(ws: Workspace) -> None:
    assert _json(ws, {"required_paths": ["name", "meta.tags.0", "items.1.owner", "empty"]}).passed
    item = _json(ws, {"required_paths": ["meta.owner", "items.5", "name.x"]})
    assert item.details == ["missing path meta.owner", "missing path items.5", "missing path name.x"]


def test_json_non_empty_paths_reject_empty_null_and_missing(ws: Workspace) -> None:
    assert _json(ws, {"non_empty_paths": ["name", "items", "meta.tags"]}).passed
    item = _json(ws, {"non_empty_paths": ["empty", "items.1.owner", "nope"]})
    assert item.details == ["empty path empty", "empty path items.1.owner", "empty path nope"]


def test_json_array_items_require_every_item_to_hold_the_keys(ws: Workspace) -> None:
    assert _json(ws, {"array_items_require": [{"path": "items", "keys": ["id", "state"]}]}).passed
    item = _json(ws, {"array_items_require": [{"path": "items", "keys": ["id", "owner"]}]})
    assert item.details == ["items has 1 item(s) missing required keys (id, owner)"]
    assert _json(ws, {"array_items_require": {"name": ["id"]}}).details == ["name is not an array"]


def test_json_array_items_require_on_the_root_array(ws: Workspace) -> None:
    assert _json(ws, {"array_items_require": [{"path": "", "keys": ["id"]}]}, doc=[{"id": 1}]).passed


def test_json_array_none_match_by_pattern(ws: Workspace) -> None:
    assert _json(ws, {"array_none_match": [{"path": "items", "field": "state", "pattern": "^fail"}]}).passed
    item = _json(ws, {"array_none_match": [{"path": "items", "field": "state", "pattern": "^open$"}]})
    assert item.details == ["items has 1 item(s) with state matching /^open$/"]


def test_json_array_none_match_pattern_sees_non_strings_as_json(ws: Workspace) -> None:
    assert not _json(ws, {"array_none_match": [{"path": "items", "field": "id", "pattern": "^2$"}]}).passed


def test_json_array_none_match_by_equals_as_prompt_runner(ws: Workspace) -> None:
    assert not _json(ws, {"array_none_match": [{"path": "items", "field": "owner", "equals": None}]}).passed
    assert _json(ws, {"array_none_match": [{"path": "items", "field": "state", "equals": "failed"}]}).passed


def test_json_array_none_match_on_an_absent_path_has_nothing_to_match(ws: Workspace) -> None:
    assert _json(ws, {"array_none_match": [{"path": "nope", "field": "x", "pattern": "."}]}).passed


def test_json_parse_error_fails(ws: Workspace) -> None:
    ws.write("data.json", "{'single': 'quotes'}")
    item = ws.item({"json": [{"path": "data.json"}]})
    assert not item.passed and item.details[0].startswith("JSON parse failed")
