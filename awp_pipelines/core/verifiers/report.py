"""What a verification found: one ItemResult per contract item, gathered in a VerifierReport."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field

from awp_pipelines.core.records.plural import counted

Fault = Literal["verifier_fault", "verifier_timeout"]


def cap_lines(lines: list[str], max_lines: int, *, keep: Literal["head", "tail"] = "head") -> list[str]:
    """At most `max_lines` lines, one of them saying how many were left out."""
    if len(lines) <= max_lines:
        return list(lines)
    if max_lines <= 1:
        return [f"... {counted(len(lines), 'line')} omitted"][:max_lines]
    shown = max_lines - 1
    note = f"... {counted(len(lines) - shown, 'line')} omitted"
    return [note, *lines[-shown:]] if keep == "tail" else [*lines[:shown], note]


class ItemResult(BaseModel):
    """The verdict on one contract item (one Dagster asset check)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: str = Field(description="The clause: files_exist, contains, commands, changed_paths_only, ...")
    check_name: str = Field(description="Stable name of the item within its contract (the asset check name).")
    label: str = Field(description="Prompt Runner's checklist label of the item (one line).")
    description: str = Field("", description="What the item demands, as a sentence (empty in old records).")
    repo: str | None = Field(default=None, description="Repository the item was checked in.")
    path: str | None = Field(default=None, description="Path as written in the contract.")
    resolved_path: str | None = Field(default=None, description="Absolute path that was checked.")
    passed: bool = Field(description="True when the item is met.")
    details: list[str] = Field(default_factory=list, description="What was found, one line each.")
    fault: Fault | None = Field(
        default=None, description="Set when the check could not run: says nothing about the work."
    )
    command: str | None = Field(default=None, description="Commands: the argv, shell-quoted.")
    cwd: str | None = Field(default=None, description="Commands: the working directory.")
    exit_code: int | None = Field(default=None, description="Commands: the exit code, when it exited.")


    @property
    def readable(self) -> str:
        """What people read: the description, or the label for records stored before descriptions."""
        return self.description or self.label


class VerifierReport(BaseModel):
    """All items of one contract. Faults (checks that could not run) are kept apart from failures."""

    # `extra="ignore"`: a dumped report carries the computed fields below and must validate back.
    model_config = ConfigDict(extra="ignore", frozen=True)

    prompt_id: str = Field(default="", description="The prompt whose contract this is.")
    items: list[ItemResult] = Field(default_factory=list, description="One result per contract item.")

    # mypy rejects any decorator stacked on @property, so each computed_field below carries
    # ignore[prop-decorator], as pydantic's docs prescribe (docs.pydantic.dev, api/fields, computed_field).
    @computed_field(description="Every item passed and none faulted.")  # type: ignore[prop-decorator]
    @property
    def passed(self) -> bool:
        return all(item.passed and item.fault is None for item in self.items)

    @computed_field(description="Items that ran and are not met (repairable).")  # type: ignore[prop-decorator]
    @property
    def failures(self) -> list[ItemResult]:
        return [item for item in self.items if not item.passed and item.fault is None]

    @computed_field(description="Items whose check could not run.")  # type: ignore[prop-decorator]
    @property
    def faults(self) -> list[ItemResult]:
        return [item for item in self.items if item.fault is not None]

    def unmet_text(self, max_lines: int = 40) -> str:
        """The unmet items as readable text for a repair prompt; each item's details capped at `max_lines`."""
        blocks = [_unmet_block(item, max_lines) for item in self.items if not item.passed or item.fault]
        return "\n\n".join(blocks)


def _unmet_block(item: ItemResult, max_lines: int) -> str:
    lines = [f"- {item.label} [{item.kind}]"]
    for name in ("repo", "path", "command", "cwd", "exit_code", "fault"):
        value = getattr(item, name)
        if value is not None:
            lines.append(f"  {name}: {value}")
    if item.details:
        lines.append("  details:")
        lines.extend(f"    {line}" for line in cap_lines(item.details, max_lines))
    return "\n".join(lines)
