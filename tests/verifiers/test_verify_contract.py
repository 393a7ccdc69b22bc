"""The contract model: strict, documented, and accepting Prompt Runner's spellings where they differ."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from awp_pipelines.core.packet.model import contract as contract_module
from awp_pipelines.core.verifiers import VerifyContract


def test_unknown_clause_is_rejected() -> None:
    with pytest.raises(ValidationError, match="files_exists"):
        VerifyContract.model_validate({"files_exists": ["a"]})


def test_unknown_key_in_an_entry_is_rejected() -> None:
    with pytest.raises(ValidationError, match="txt"):
        VerifyContract.model_validate({"contains": [{"path": "a", "txt": "b"}]})


def _models() -> list[type[BaseModel]]:
    return [
        value
        for value in vars(contract_module).values()
        if isinstance(value, type) and issubclass(value, BaseModel) and value is not BaseModel
    ]


@pytest.mark.parametrize("model", _models(), ids=lambda m: m.__name__)
def test_every_model_is_strict_frozen_and_documents_every_field(model: type[BaseModel]) -> None:
    assert model.model_config.get("extra") == "forbid"
    assert model.model_config.get("frozen") is True
    undocumented = [name for name, info in model.model_fields.items() if not info.description]
    assert undocumented == []


def test_empty_contract_is_empty_and_any_entry_makes_it_non_empty() -> None:
    assert VerifyContract().is_empty()
    assert VerifyContract.model_validate({"files_exist": [], "commands": []}).is_empty()
    assert not VerifyContract.model_validate({"json": [{"path": "a.json"}]}).is_empty()


def test_contract_is_frozen() -> None:
    contract = VerifyContract()
    with pytest.raises(ValidationError):
        contract.files_exist = ["a"]  # type: ignore[misc]


@pytest.mark.parametrize(
    "value, repos",
    [
        ({"repo": "app", "pushed": True}, ["app"]),
        ("app", ["app"]),
        (["app", {"repo": "beta"}], ["app", "beta"]),
    ],
)
def test_repos_clean_accepts_one_mapping_a_name_or_a_list(value: Any, repos: list[str]) -> None:
    contract = VerifyContract.model_validate({"repos_clean": value})
    assert [entry.repo for entry in contract.repos_clean] == repos


def test_array_items_require_accepts_the_prompt_runner_mapping_form() -> None:
    contract = VerifyContract.model_validate(
        {"json": [{"path": "a.json", "array_items_require": {"items": ["id", "name"]}}]}
    )
    (rule,) = contract.json_[0].array_items_require
    assert (rule.path, rule.keys) == ("items", ["id", "name"])


@pytest.mark.parametrize(
    "rule",
    [
        {"path": "items", "field": "state"},
        {"path": "items", "field": "state", "pattern": "x", "equals": "y"},
        {"path": "items", "field": "state", "pattern": None},
    ],
)
def test_array_none_match_needs_exactly_one_of_pattern_and_equals(rule: dict[str, Any]) -> None:
    with pytest.raises(ValidationError, match="exactly one"):
        VerifyContract.model_validate({"json": [{"path": "a.json", "array_none_match": [rule]}]})


def test_array_none_match_accepts_equals_null() -> None:
    contract = VerifyContract.model_validate(
        {"json": [{"path": "a.json", "array_none_match": [{"path": "x", "field": "f", "equals": None}]}]}
    )
    assert "equals" in contract.json_[0].array_none_match[0].model_fields_set


@pytest.mark.parametrize(
    "verify",
    [
        {"matches": [{"path": "a", "pattern": "("}]},
        {"source_absent": [{"path": "src", "patterns": ["ok", "[unclosed"]}]},
        {"commands": [{"exec": "true", "stdout_matches": "*"}]},
        {"json": [{"path": "a", "array_none_match": [{"path": "x", "field": "f", "pattern": "(?P<"}]}]},
    ],
)
def test_invalid_regex_is_rejected_when_the_contract_loads(verify: dict[str, Any]) -> None:
    with pytest.raises(ValidationError, match="invalid regular expression"):
        VerifyContract.model_validate(verify)


def test_fault_exit_codes_must_be_exit_codes() -> None:
    with pytest.raises(ValidationError, match="0..255"):
        VerifyContract.model_validate({"commands": [{"exec": "true", "fault_exit_codes": [256]}]})


def test_json_clause_keeps_its_yaml_key_when_dumped_and_reloaded() -> None:
    contract = VerifyContract.model_validate({"json": [{"path": "a.json", "root": "object"}]})
    dumped = contract.model_dump(exclude_defaults=True)
    assert dumped == {"json": [{"path": "a.json", "root": "object"}]}
    assert VerifyContract.model_validate(dumped) == contract


def test_command_defaults_follow_prompt_runner() -> None:
    (command,) = VerifyContract.model_validate({"commands": [{"exec": "pytest"}]}).commands
    assert (command.timeout_ms, command.cwd, command.args, command.fault_exit_codes) == (30000, ".", [], [])


def test_json_schema_is_generated() -> None:
    schema = VerifyContract.model_json_schema()
    assert set(schema["properties"]) >= {"json", "yaml", "commands", "changed_paths_only", "repos_clean"}
