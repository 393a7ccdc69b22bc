"""The generated `NN_slug.prompt.checklist.md`, byte for byte as Prompt Runner 0.12.1's `checklist sync`."""

from __future__ import annotations

from awp_pipelines.core.packet.model.contract import VerifyContract

from .clause_table import CLAUSE_TABLE
from .items import entry_label

# Prompt Runner's text for a prompt without items, kept verbatim so both tools write the same file.
_NO_ITEMS = (
    "No verification items yet.\n\n"
    "Add `verify:` entries to the prompt front matter, then run\n"
    "`mix prompt_runner checklist sync` again.\n"
)


def checklist_labels(contract: VerifyContract) -> list[str]:
    """One label per entry. Clauses come in key order because Prompt Runner walks a small Elixir map,
    whose keys iterate sorted; entries keep their contract order."""
    return [entry_label(clause.name, entry) for clause in sorted(CLAUSE_TABLE, key=lambda c: c.name)
            for entry in clause.entries(contract)]


def checklist_markdown(prompt_id: str, prompt_name: str, contract: VerifyContract) -> str:
    labels = checklist_labels(contract)
    items = "\n".join(f"- [ ] {label}" for label in labels) if labels else _NO_ITEMS
    text = (
        f"# Checklist {prompt_id}: {prompt_name}\n\n"
        "Generated from the prompt verification contract.\n\n"
        "## Verification Items\n\n"
        f"{items}\n"
    )
    return text.strip() + "\n"
