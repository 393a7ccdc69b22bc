"""`awp control amend|relax`: changing what "done" means for one running AgentRun, on the record. Pure.

Prompt Runner's rules: adding a requirement is `amend`; removing one is `relax`, a different verb that needs
`--confirm`; `--reason` is mandatory on both; each amendment says when it came relative to verification
(`pre_verify`, `post_failure`, `post_success`). Run-local: the packet's file stays as written and a new packet
run uses it; the AgentRun's Attempts verify the amended contract and record the amendments in force.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from awp_pipelines.core.decisions.operator_control import (
    LogEntry,
    OperatorError,
    append_log,
    now,
    read_lines,
    read_log,
)
from awp_pipelines.core.packet.model.contract import VerifyContract

Phase = Literal["pre_verify", "post_failure", "post_success"]
Direction = Literal["amend", "relax"]
CLAUSES: tuple[str, ...] = tuple(f.alias or name for name, f in VerifyContract.model_fields.items())


class Amendment(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    at: str
    direction: Direction = Field(description="amend adds a requirement; relax drops one.")
    clause: str = Field(description="The contract clause (files_exist, contains, …).")
    entries: list[Any] = Field(default_factory=list, description="What amend adds to the clause.")
    reason: str
    author: str
    phase: Phase = Field(description="When it came: before any verify, after a failed one, after a passed one.")

    def line(self) -> str:
        what = f"add {self.clause}: {self.entries}" if self.direction == "amend" else f"drop {self.clause}"
        return f"{self.phase} {self.direction} {what} by {self.author} — {self.reason}"


def phase_now(folder: Path) -> Phase:
    verdicts = [e.passed for e in read_log(folder) if e.command == "verify"]
    if not verdicts:
        return "pre_verify"
    return "post_success" if verdicts[-1] else "post_failure"


def submit(folder: Path, direction: Direction, clause: str, entries: list[Any], reason: str, author: str,
           confirm: bool = False) -> Amendment:
    """Record an amendment for the AgentRun (checked against the contract's model first)."""
    if not reason.strip():
        raise OperatorError("--reason is mandatory: an amendment with no stated reason is refused, not defaulted")
    if clause not in CLAUSES:
        raise OperatorError(f"unknown clause {clause!r}: one of {', '.join(CLAUSES)}")
    if direction == "relax" and not confirm:
        raise OperatorError("relax needs --confirm: removing a requirement is the risky direction, said out loud")
    if direction == "amend" and not entries:
        raise OperatorError("name what to add (--add-file PATH, or --add CLAUSE=YAML)")
    amendment = Amendment(at=now(), direction=direction, clause=clause, entries=entries, reason=reason.strip(),
                          author=author, phase=phase_now(folder))
    enforced(VerifyContract(), [amendment])  # a malformed entry is refused now, not at the next verify
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "amendments.jsonl").open("a", encoding="utf-8") as fh:
        fh.write(amendment.model_dump_json() + "\n")
    append_log(folder, LogEntry(at=now(), command=direction, outcome="applied", author=author, detail=amendment.line()))
    return amendment


def read(folder: Path | None) -> list[Amendment]:
    return read_lines(folder / "amendments.jsonl", Amendment) if folder is not None else []


def enforced(contract: VerifyContract | None, amendments: list[Amendment]) -> VerifyContract | None:
    """The contract the AgentRun is held to: the packet's, each amendment applied in order (never written back)."""
    if not amendments:
        return contract
    data = (contract or VerifyContract()).model_dump(by_alias=True, exclude_defaults=True)
    for amendment in amendments:
        if amendment.direction == "relax":
            data.pop(amendment.clause, None)
        else:
            data[amendment.clause] = [*data.get(amendment.clause, []), *amendment.entries]
    try:
        return VerifyContract.model_validate(data)
    except ValidationError as err:
        raise OperatorError(f"the amended contract is not valid: {str(err).splitlines()[0]}") from None
