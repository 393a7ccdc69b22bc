"""The generated checklist equals the committed one, byte for byte, for every prompt of the Prompt Runner-format
packets: Prompt Runner 0.12.1 generated the shared ones, `awp checklist sync` the project's fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest
from packet_sources import PACKET_NAMES, PacketSource, packet_sources
from verify_helpers import front_matter

from awp_pipelines.core.packet.packet import normalize_id
from awp_pipelines.core.verifiers import VerifyContract
from awp_pipelines.core.verifiers.checklist import checklist_markdown

SOURCES = packet_sources()
CHECKLISTS = [(source, file) for source in SOURCES
              for file in sorted(source.root.glob("*/prompts/*.prompt.checklist.md"))]


@pytest.mark.parametrize(("source", "checklist"), CHECKLISTS,
                         ids=lambda v: v.name if isinstance(v, PacketSource) else f"{v.parts[-3]}/{v.name}")
def test_checklist_matches_prompt_runner_byte_for_byte(source: PacketSource, checklist: Path) -> None:
    prompt = checklist.with_name(checklist.name.replace(".prompt.checklist.md", ".prompt.md"))
    meta = front_matter(prompt)
    contract = VerifyContract.model_validate(meta.get("verify") or {})
    assert checklist_markdown(normalize_id(meta["id"]), meta["name"], contract) == checklist.read_text()


@pytest.mark.parametrize("source", SOURCES, ids=str)
def test_every_source_has_a_checklist_for_each_prompt_of_the_five_packets(source: PacketSource) -> None:
    prompts = sorted(source.root.glob("*/prompts/*.prompt.md"))
    checked = {file for s, file in CHECKLISTS if s == source}
    assert {p.parts[-3] for p in prompts} == set(PACKET_NAMES)
    assert {p.with_name(p.name.replace(".prompt.md", ".prompt.checklist.md")) for p in prompts} == checked


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
        "- [ ] doc: README.md (non-blank; 1 line advisory)",
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
