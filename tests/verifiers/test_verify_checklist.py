"""The generated checklist equals Prompt Runner 0.12.1's for every prompt of the compat packets."""

from __future__ import annotations

from pathlib import Path

import pytest
from verify_helpers import COMPAT, front_matter

from awp_pipelines.verifiers import VerifyContract
from awp_pipelines.verifiers.checklist import checklist_markdown

CHECKLISTS = sorted(COMPAT.glob("*/prompts/*.prompt.checklist.md")) if COMPAT.is_dir() else []


@pytest.mark.skipif(not CHECKLISTS, reason=f"compat packets not found at {COMPAT}")
@pytest.mark.parametrize("checklist", CHECKLISTS, ids=lambda p: f"{p.parts[-3]}/{p.name}")
def test_checklist_matches_prompt_runner_byte_for_byte(checklist: Path) -> None:
    prompt = checklist.with_name(checklist.name.replace(".prompt.checklist.md", ".prompt.md"))
    meta = front_matter(prompt)
    contract = VerifyContract.model_validate(meta.get("verify") or {})
    assert checklist_markdown(str(meta["id"]), meta["name"], contract) == checklist.read_text()


def test_the_compat_corpus_has_the_five_packets_checked_above() -> None:
    if not CHECKLISTS:
        pytest.skip(f"compat packets not found at {COMPAT}")
    assert {p.parts[-3] for p in CHECKLISTS} == {
        "authoring_packet",
        "claude_packet",
        "multi_repo_packet",
        "simulated_recovery_packet",
        "single_repo_packet",
    }


def test_checklist_groups_by_clause_key_and_keeps_entry_order() -> None:
    contract = VerifyContract.model_validate(
        {
            "files_exist": ["b.txt", "a.txt"],
            "files_absent": ["z.log"],
            "yaml": [{"path": "c.yml"}],
            "json": [{"repo": "beta", "path": "d.json"}],
            "glob": [{"path": "docs/*.md"}],
            "source_absent": [{"path": "src", "patterns": ["x"]}],
            "matches": [{"path": "VERSION", "pattern": "1"}],
            "doc": ["README.md"],
            "commands": [{"exec": "pytest", "args": ["-q", "tests dir"]}],
            "repos_clean": [{"repo": "app", "pushed": True}, "beta"],
        }
    )
    items = checklist_markdown("07", "Everything", contract).split("## Verification Items\n\n")[1]
    assert items.splitlines() == [
        "- [ ] command: pytest -q 'tests dir'",
        "- [ ] doc: README.md (non-blank; 1 lines advisory)",
        "- [ ] file absent: z.log",
        "- [ ] file exists: b.txt",
        "- [ ] file exists: a.txt",
        "- [ ] glob contract: docs/*.md",
        "- [ ] JSON contract: beta:d.json",
        "- [ ] matches: VERSION",
        "- [ ] repo committed and pushed: app",
        "- [ ] repo committed: beta",
        "- [ ] forbidden source absent: src",
        "- [ ] YAML parses: c.yml",
    ]


def test_checklist_without_items_says_so() -> None:
    assert checklist_markdown("03", "Draft", VerifyContract()) == (
        "# Checklist 03: Draft\n\n"
        "Generated from the prompt verification contract.\n\n"
        "## Verification Items\n\n"
        "No verification items yet.\n\n"
        "Add `verify:` entries to the prompt front matter, then run\n"
        "`mix prompt_runner checklist sync` again.\n"
    )
