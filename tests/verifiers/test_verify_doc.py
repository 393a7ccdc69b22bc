"""doc: sections as headings, forbidden markers, advisory min_lines, blank documents."""

from __future__ import annotations

from verify_helpers import Workspace

REPORT = """# Report

## Method

We measured twice.

## Verdict

It works.

```markdown
## Appendix
```
"""


def test_doc_passes_with_its_required_sections(ws: Workspace) -> None:
    ws.write("REPORT.md", REPORT)
    item = ws.item({"doc": [{"path": "REPORT.md", "requires_sections": ["## Method", "## Verdict"]}]})
    assert item.passed, item.details
    assert item.details == ["8 non-blank lines"]


def test_doc_fails_listing_missing_sections(ws: Workspace) -> None:
    ws.write("REPORT.md", REPORT)
    item = ws.item({"doc": [{"path": "REPORT.md", "requires_sections": ["## Method", "## Risks", "## Costs"]}]})
    assert not item.passed
    assert item.details[0] == "missing sections: ## Risks, ## Costs"


def test_doc_section_with_hashes_requires_that_level(ws: Workspace) -> None:
    ws.write("REPORT.md", REPORT)
    assert not ws.item({"doc": [{"path": "REPORT.md", "requires_sections": ["### Method"]}]}).passed


def test_doc_section_without_hashes_accepts_any_level(ws: Workspace) -> None:
    ws.write("REPORT.md", REPORT)
    assert ws.item({"doc": [{"path": "REPORT.md", "requires_sections": ["Report", "Verdict"]}]}).passed


def test_doc_section_text_in_a_paragraph_or_code_fence_is_not_a_heading(ws: Workspace) -> None:
    ws.write("REPORT.md", REPORT + "\nSee the Risks section.\n")
    assert not ws.item({"doc": [{"path": "REPORT.md", "requires_sections": ["## Appendix"]}]}).passed
    assert not ws.item({"doc": [{"path": "REPORT.md", "requires_sections": ["Risks"]}]}).passed


def test_doc_closing_hashes_are_decoration(ws: Workspace) -> None:
    ws.write("REPORT.md", "## Method ##\ntext\n")
    assert ws.item({"doc": [{"path": "REPORT.md", "requires_sections": ["## Method"]}]}).passed


def test_doc_default_markers_catch_todo_and_the_template_placeholder(ws: Workspace) -> None:
    ws.write("A.md", "# A\n\nTODO: write this\n")
    ws.write("B.md", "# B\n\n<!-- prompt_runner:placeholder mission -->\nDescribe the work.\n")
    a, b = ws.verify({"doc": ["A.md", "B.md"]}).items
    assert not a.passed and a.details[0] == "forbidden markers: TODO (line 3)"
    assert not b.passed and b.details[0] == "forbidden markers: <!-- prompt_runner:placeholder (line 3)"


def test_doc_custom_markers_replace_the_default_and_an_empty_list_disables(ws: Workspace) -> None:
    ws.write("A.md", "# A\n\nTODO later\nDRAFT\n")
    custom = ws.item({"doc": [{"path": "A.md", "forbids_markers": ["DRAFT"]}]})
    assert custom.details[0] == "forbidden markers: DRAFT (line 4)"
    assert ws.item({"doc": [{"path": "A.md", "forbids_markers": []}]}).passed


def test_doc_min_lines_is_advisory_and_reported(ws: Workspace) -> None:
    ws.write("A.md", "# A\n\nshort\n")
    item = ws.item({"doc": [{"path": "A.md", "min_lines": 100}]})
    assert item.passed
    assert item.details == ["2 non-blank lines (advisory: min_lines is 100)"]


def test_doc_blank_document_fails(ws: Workspace) -> None:
    ws.write("A.md", "\n   \n\n")
    item = ws.item({"doc": ["A.md"]})
    assert not item.passed and item.details[0] == "document is blank"


def test_doc_missing_file_fails(ws: Workspace) -> None:
    assert ws.item({"doc": ["A.md"]}).details[0].startswith("missing file:")


def test_doc_entry_forms_resolve_like_every_other_clause(ws: Workspace) -> None:
    ws.write("GUIDE.md", "# Guide\n\ntext\n", repo="beta")
    entries = [
        "beta:GUIDE.md",
        {"repo": "beta", "path": "GUIDE.md"},
        {"repo": "beta", "path": "GUIDE.md", "requires_sections": ["# Guide"]},
    ]
    report = ws.verify({"doc": entries})
    assert [(item.repo, item.passed) for item in report.items] == [("beta", True)] * 3
