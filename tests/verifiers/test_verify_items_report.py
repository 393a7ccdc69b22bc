"""Items (one asset check each), the engine's one-result-per-item promise, and the report."""

from __future__ import annotations

import ast
import re
import string
import sys
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from verify_helpers import Workspace

from awp_pipelines.core.isolation import network_setting as network_setting_module
from awp_pipelines.core.isolation import verifier_sandbox as verifier_sandbox_module
from awp_pipelines.core.packet.model import contract as contract_module
from awp_pipelines.core.packet.model import pathtext as pathtext_module
from awp_pipelines.core.records import (
    commit_seal,
    git_repository,
    process_env,
    tree_restore,
    tree_writer,
    work_tree_scan,
)
from awp_pipelines.core.records import git_links as git_links_module
from awp_pipelines.core.records import plural as plural_module
from awp_pipelines.core.records import redact as redact_module
from awp_pipelines.core.records import regular_files as regular_files_module
from awp_pipelines.core.records import secret_scan as secret_scan_module
from awp_pipelines.core.records import workspace as workspace_module
from awp_pipelines.core.verifiers import VerifierReport, VerifyContract, contract_items, run_contract
from awp_pipelines.core.verifiers import engine as engine_module
from awp_pipelines.core.verifiers.clause_table import CLAUSES

EVERY_CLAUSE: dict[str, Any] = {
    "repos_clean": ["app"],
    "changed_paths_only": ["hello.txt", "beta:NOTES.md"],
    "commands": [{"exec": "true"}, {"repo": "beta", "exec": "bin/check", "args": ["--fast"]}],
    "source_absent": [{"path": "src", "patterns": ["x"]}],
    "glob": [{"path": "docs/*.md"}],
    "json": [{"path": "a.json"}],
    "yaml": [{"path": "a.yml"}],
    "doc": ["README.md", {"path": "docs/guide.md", "min_lines": 5}],
    "matches": [{"path": "a", "pattern": "b"}],
    "contains": [{"repo": "beta", "path": "NOTES.md", "text": "ok"}],
    "files_absent": ["build.log"],
    "files_exist": ["hello.txt", "alpha:NOTES.md", {"repo": "beta", "path": "NOTES.md"}],
}


def test_items_come_in_clause_order_then_entry_order() -> None:
    items = contract_items(VerifyContract.model_validate(EVERY_CLAUSE))
    kinds = [item.kind for item in items]
    assert kinds == sorted(kinds, key=CLAUSES.index)
    assert [item.check_name for item in items][:3] == [
        "hello_txt_exists",
        "alpha_notes_md_exists",
        "beta_notes_md_exists",
    ]


def test_whole_repo_clauses_are_one_item_each() -> None:
    items = contract_items(VerifyContract.model_validate(EVERY_CLAUSE))
    whole = [item for item in items if item.kind in ("changed_paths_only", "repos_clean")]
    assert [(item.kind, item.check_name) for item in whole] == [
        ("changed_paths_only", "changed_paths_only"),
        ("repos_clean", "repos_clean"),
    ]
    assert whole[0].label == "only these paths changed: hello.txt, beta:NOTES.md"


def test_items_carry_repo_and_path_as_written() -> None:
    items = {item.check_name: item for item in contract_items(VerifyContract.model_validate(EVERY_CLAUSE))}
    assert (items["alpha_notes_md_exists"].repo, items["alpha_notes_md_exists"].path) == (
        "alpha",
        "NOTES.md",
    )
    assert items["command_beta_bin_check_fast"].label == "command: beta: bin/check --fast"
    assert items["command_beta_bin_check_fast"].repo == "beta"
    assert items["docs_guide_md_is_a_document"].label == "doc: docs/guide.md (non-blank; 5 lines advisory)"


def test_run_contract_returns_one_result_per_item_with_the_same_names(ws: Workspace) -> None:
    contract = VerifyContract.model_validate(EVERY_CLAUSE)
    report = run_contract(contract, ws.ctx())
    assert [(r.kind, r.check_name, r.label) for r in report.items] == [
        (i.kind, i.check_name, i.label) for i in contract_items(contract)
    ]
    assert report.prompt_id == "01"


def test_a_crashing_check_becomes_a_fault_not_a_missing_result(ws: Workspace, monkeypatch) -> None:
    def boom(entry: Any, ctx: Any) -> Any:
        raise RuntimeError("disk on fire")

    monkeypatch.setitem(engine_module.CHECKS, "files_exist", boom)
    (item,) = ws.verify({"files_exist": ["a"]}).items
    assert item.fault == "verifier_fault" and item.details == ["check crashed: RuntimeError: disk on fire"]


_words = st.text(alphabet=string.ascii_letters + string.digits + "._-/: é", min_size=1, max_size=80)
_entries = st.lists(_words, max_size=4)


@st.composite
def contracts(draw: st.DrawFn) -> VerifyContract:
    paths = {
        "files_exist": draw(_entries),
        "files_absent": draw(_entries),
        "doc": draw(_entries),
        "changed_paths_only": draw(_entries),
        "contains": [{"path": p, "text": "t"} for p in draw(_entries)],
        "glob": [{"path": p} for p in draw(_entries)],
        "commands": [{"exec": p, "args": [draw(_words)]} for p in draw(_entries)],
        "repos_clean": draw(st.lists(_words, max_size=2)),
    }
    return VerifyContract.model_validate(paths)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(contracts())
def test_check_names_are_unique_valid_and_short(contract: VerifyContract) -> None:
    names = [item.check_name for item in contract_items(contract)]
    assert len(names) == len(set(names))
    assert all(re.fullmatch(r"[A-Za-z0-9_]{1,63}", name) for name in names)
    assert names == [item.check_name for item in contract_items(contract)]  # deterministic


def test_check_name_is_cut_to_63_characters_keeping_what_it_checks() -> None:
    (item,) = contract_items(VerifyContract.model_validate({"source_absent": [{"path": "a/" * 60, "patterns": ["x"]}]}))
    assert len(item.check_name) <= 63 and item.check_name.startswith("a_a_")
    assert item.check_name.endswith("_has_no_forbidden_source")
    (item,) = contract_items(VerifyContract.model_validate({"contains": [{"path": "GREETING.md",
                                                                           "text": "hello world " * 9}]}))
    assert len(item.check_name) <= 63 and item.check_name.startswith("greeting_md_contains_hello_world")


def test_no_credential_reaches_a_check_name_from_a_command_argv_or_a_contains_text() -> None:
    # A literal account key matches no secret pattern; a key-shaped one does. Neither is in a name, whole or
    # as a prefix (a name is cut to 63 characters), and the description keeps no key-shaped one.
    literal, shaped = "canary-in-use-7f3a9c1e5b2d", "sk-ant-" + "api03-" + "Q" * 24
    contract = VerifyContract.model_validate({
        "commands": [{"exec": "deploy", "args": ["--token", literal]}, {"exec": "curl", "args": ["-H", shaped]}],
        "contains": [{"path": "config.txt", "text": f"key {literal}"}],
        "matches": [{"path": "env.txt", "pattern": shaped}]})
    items = contract_items(contract)
    assert [i.check_name for i in items] == [
        "config_txt_contains_key_canary_in_use", "env_txt_matches_redacted",
        "command_deploy_token_canary_in_use", "command_curl_h_redacted"]
    for item in items:
        assert "7f3a9c1e5b2d" not in item.check_name and "qqqq" not in item.check_name
        assert shaped not in item.description


def test_check_names_read_as_what_they_check_and_descriptions_as_what_is_demanded() -> None:
    contract = VerifyContract.model_validate({
        "files_exist": ["GREETING.md"], "contains": [{"path": "GREETING.md", "text": "Hello from AWP Pipelines"}],
        "doc": ["STATUS.md"], "commands": [{"exec": "git", "args": ["diff", "--quiet"]}],
        "changed_paths_only": ["GREETING.md"]})
    items = {item.check_name: item for item in contract_items(contract)}
    assert items["greeting_md_contains_hello_from_awp_pipelines"].description == \
        "GREETING.md contains “Hello from AWP Pipelines”"
    assert items["greeting_md_exists"].description == "GREETING.md exists"
    assert items["status_md_is_a_document"].description.startswith("STATUS.md is a written document: not blank")
    assert items["command_git_diff_quiet"].description == "`git diff --quiet` exits 0"
    assert items["changed_paths_only"].description == "Only GREETING.md changed"
    # The label stays Prompt Runner's checklist label (the checklist file is byte-compatible).
    assert items["status_md_is_a_document"].label == "doc: STATUS.md (non-blank; 1 line advisory)"


def test_two_items_that_would_share_a_name_get_stable_suffixes() -> None:
    entries = [{"path": "a.md", "text": "x!"}, {"path": "a.md", "text": "x?"}]
    contract = VerifyContract.model_validate({"contains": entries})
    names = [item.check_name for item in contract_items(contract)]
    assert names == ["a_md_contains_x", "a_md_contains_x_2"]


def test_empty_contract_has_no_items_and_passes(ws: Workspace) -> None:
    report = ws.verify({})
    assert report.items == [] and report.passed


def test_report_passes_only_when_every_item_passes_and_none_faults(ws: Workspace) -> None:
    ws.write("hello.txt")
    assert ws.verify({"files_exist": ["hello.txt"]}).passed
    failed = ws.verify({"files_exist": ["hello.txt", "missing.txt"]})
    assert not failed.passed and [f.path for f in failed.failures] == ["missing.txt"] and failed.faults == []
    faulted = ws.verify({"files_exist": ["hello.txt"], "commands": [{"exec": "no-such-tool-awp"}]})
    assert not faulted.passed and faulted.failures == [] and [f.kind for f in faulted.faults] == ["commands"]


def test_report_round_trips_through_its_json_dump(ws: Workspace) -> None:
    report = ws.verify({"files_exist": ["missing.txt"], "commands": [{"exec": "no-such-tool-awp"}]})
    dumped = report.model_dump(mode="json")
    assert dumped["passed"] is False and len(dumped["failures"]) == 1 and len(dumped["faults"]) == 1
    assert VerifierReport.model_validate(dumped) == report
    assert VerifierReport.model_validate_json(report.model_dump_json()) == report


def test_unmet_text_names_kind_repo_path_command_cwd_and_output(ws: Workspace) -> None:
    ws.write("hello.txt")
    ws.script("bin/check", "echo 'assertion failed: 2 != 3'\nexit 1")
    report = ws.verify({"files_exist": ["hello.txt", "beta:NOTES.md"], "commands": [{"exec": "bin/check"}]})
    text = report.unmet_text()
    assert "hello.txt" not in text  # met items are left out
    assert text == "\n".join(
        [
            "- file exists: beta:NOTES.md [files_exist]",
            "  repo: beta",
            "  path: NOTES.md",
            "  details:",
            f"    missing: {ws.repos['beta'] / 'NOTES.md'}",
            "",
            "- command: bin/check [commands]",
            "  repo: app",
            "  command: bin/check",
            f"  cwd: {ws.repos['app']}",
            "  exit_code: 1",
            "  details:",
            "    failed: exit 1",
            "    assertion failed: 2 != 3",
        ]
    )


def test_unmet_text_shows_faults_and_caps_each_item(ws: Workspace) -> None:
    ws.script("bin/noisy", 'i=1\nwhile [ $i -le 100 ]; do echo "line $i"; i=$((i+1)); done\nexit 3')
    report = ws.verify({"commands": [{"exec": "bin/noisy", "fault_exit_codes": [3]}]})
    text = report.unmet_text(max_lines=5)
    assert "  fault: verifier_fault" in text
    detail_lines = text.split("  details:\n")[1].splitlines()
    assert len(detail_lines) == 5 and detail_lines[-1] == "    ... 36 lines omitted"
    assert len(report.unmet_text().split("  details:\n")[1].splitlines()) == 40


def test_unmet_text_is_empty_when_everything_passed(ws: Workspace) -> None:
    assert ws.verify({"files_absent": ["nope"]}).unmet_text() == ""


def test_the_verifier_imports_only_the_stdlib_pydantic_yaml_and_the_contract_model() -> None:
    """The verifier stands alone: besides the stdlib, pydantic and yaml it reads only the contract it checks
    (the packet model's `verify:` block), which itself needs nothing but pydantic, the redactor (check names
    must hold no secret), which needs nothing but pydantic either, AWP's git through libgit2 (pygit2: the
    repository opened at its pinned path, the tree's scan, writer and restorer, the commit seal, the network
    git's allow-listed environment) with its lstat checks, its reader of files that never follows a link, its
    secret scan and the counted nouns of its reports ("1 line"), and the verifier's sandbox (bubblewrap, the
    way the agent's sandbox builds it) with the
    `network` it may ask for."""
    package = Path(engine_module.__file__).parent
    git_modules = (git_repository, work_tree_scan, tree_writer, tree_restore, commit_seal, process_env)
    contract_files = [Path(m.__file__ or "") for m in (contract_module, pathtext_module, redact_module,
                                                       workspace_module, regular_files_module, git_links_module,
                                                       secret_scan_module, plural_module, *git_modules)]
    outside: set[str] = set()
    ours: set[str] = set()
    for source in [*package.rglob("*.py"), *contract_files]:
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.Import):
                outside |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:  # relative: verifiers/
                if node.module.startswith("awp_pipelines"):
                    ours.add(node.module)
                else:
                    outside.add(node.module.split(".")[0])
    assert outside - set(sys.stdlib_module_names) == {"pydantic", "yaml", "pygit2"}
    assert {m.__name__ for m in (contract_module, workspace_module, verifier_sandbox_module)} <= ours <= {
        m.__name__ for m in (contract_module, pathtext_module, redact_module, workspace_module,
                             verifier_sandbox_module, network_setting_module, regular_files_module,
                             git_links_module, secret_scan_module, plural_module, *git_modules)}
