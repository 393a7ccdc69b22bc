"""`doc`: a written deliverable has substance: not blank, its sections present, no leftover markers.

`min_lines` is advisory (the checklist says so): a short document that is otherwise complete passes, with
the shortfall in the details. A blank document never passes.
"""

from __future__ import annotations

import re

from awp_pipelines.core.packet.model.contract import DocCheck
from awp_pipelines.core.records.plural import counted

from ..context import VerifyContext
from .outcome import Outcome, at, open_text

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*))?$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def doc(entry: str | DocCheck, ctx: VerifyContext) -> Outcome:
    spec = entry if isinstance(entry, DocCheck) else DocCheck(path=entry)
    opened = open_text(entry, ctx)
    if isinstance(opened, Outcome):
        return opened
    where, content = opened.where, opened.text

    lines = content.splitlines()
    non_blank = sum(1 for line in lines if line.strip())
    present = headings(lines)
    missing = [section for section in spec.requires_sections if not _section_present(section, present)]
    hits = [
        f"{marker} (line {number})"
        for marker in spec.markers()
        if marker and (number := _first_line_with(lines, marker))
    ]

    problems = []
    if non_blank == 0:
        problems.append("document is blank")
    if missing:
        problems.append(f"missing sections: {', '.join(missing)}")
    if hits:
        problems.append(f"forbidden markers: {', '.join(hits)}")
    size = counted(non_blank, "non-blank line")
    if non_blank < spec.min_lines:
        size += f" (advisory: min_lines is {spec.min_lines})"
    return at(where, not problems, *problems, size)


def headings(lines: list[str]) -> set[tuple[int, str]]:
    """(level, text) of every ATX heading outside fenced code blocks."""
    found: set[tuple[int, str]] = set()
    fence: str | None = None
    for line in lines:
        opener = _FENCE.match(line)
        if opener:
            mark = opener.group(1)[0]
            fence = None if fence == mark else (fence or mark)
            continue
        if fence is None and (heading := _parse_heading(line)):
            found.add(heading)
    return found


def _parse_heading(line: str) -> tuple[int, str] | None:
    match = _ATX.match(line.rstrip())
    if not match:
        return None
    # A closing run of #'s preceded by a space is decoration, not text.
    text = re.sub(r"(?:^|[ \t]+)#+$", "", (match.group(2) or "").strip()).strip()
    return len(match.group(1)), text


def _section_present(section: str, present: set[tuple[int, str]]) -> bool:
    wanted = _parse_heading(section.strip())
    if wanted is not None:
        return wanted in present
    return any(text == section.strip() for _, text in present)


def _first_line_with(lines: list[str], marker: str) -> int:
    return next((number for number, line in enumerate(lines, start=1) if marker in line), 0)
