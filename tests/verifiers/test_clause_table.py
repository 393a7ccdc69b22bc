"""The clause table is the one list of clauses: it covers every `verify:` field, and the rest derives from it."""

from __future__ import annotations

from pydantic import BaseModel, Field

from awp_pipelines.core.verifiers import VerifyContract, contract_items
from awp_pipelines.core.verifiers.clause_table import CLAUSE, CLAUSE_TABLE, CLAUSES
from awp_pipelines.core.verifiers.engine import CHECKS


def uncovered(model: type[BaseModel]) -> dict[str, str]:
    """The model's fields without a row, and rows whose YAML key is not the field's key: field → key."""
    rows = {clause.field: clause.name for clause in CLAUSE_TABLE}
    return {name: info.alias or name for name, info in model.model_fields.items()
            if rows.get(name) != (info.alias or name)}


def test_the_table_has_one_row_per_contract_field_under_its_yaml_key() -> None:
    assert uncovered(VerifyContract) == {}
    assert len(CLAUSES) == len(set(CLAUSES)) == len(VerifyContract.model_fields)
    assert {clause.field for clause in CLAUSE_TABLE} == set(VerifyContract.model_fields)


def test_a_field_added_without_a_row_is_caught() -> None:
    class Grown(VerifyContract):
        licence_header: list[str] = Field(default_factory=list)

    assert uncovered(Grown) == {"licence_header": "licence_header"}


def test_items_checks_and_labels_all_come_from_the_table() -> None:
    assert {clause.name: clause.check for clause in CLAUSE_TABLE} == CHECKS
    contract = VerifyContract.model_validate({
        "json": [{"path": "a.json"}], "files_exist": ["b"], "repos_clean": ["app", "lib"],
        "changed_paths_only": ["b", "c"]})
    items = contract_items(contract)
    assert [item.kind for item in items] == ["files_exist", "json", "changed_paths_only", "repos_clean"]
    assert items[0].label == f"{CLAUSE['files_exist'].label}: b"
    assert items[1].label == f"{CLAUSE['json'].label}: a.json"
    assert items[1].check_name == f"a_json_{CLAUSE['json'].verb}"
    # `whole` clauses: one item for all their entries
    assert [item.check_name for item in items[2:]] == ["changed_paths_only", "repos_clean"]
