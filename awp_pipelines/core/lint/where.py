"""Where a finding points: a key path in one YAML document (file, line, dotted key), or the file a value came from."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from awp_pipelines.core.packet.packet import Packet, Prompt
from awp_pipelines.core.packet.yamlsrc import YamlDoc
from awp_pipelines.core.planning.plan import PromptPlan


@dataclass(frozen=True)
class Where:
    """A key path in one YAML document: its file, line and dotted name."""

    doc: YamlDoc
    path: tuple[Any, ...]

    def at(self, *more: Any) -> Where:
        return Where(self.doc, (*self.path, *more))

    @property
    def line(self) -> int | None:
        return self.doc.line_of(self.path)

    @property
    def key(self) -> str | None:
        return ".".join(str(p) for p in self.path) or None


def resolved_at(packet: Packet, prompt: Prompt, plan: PromptPlan, key: str) -> tuple[Where | Path, str]:
    """Where a resolved value was written, and a note when it came from outside the packet."""
    source = plan.sources.get(key)
    if source is None or source.startswith("inferred") or "(alias" in source:
        key, source = "model", plan.sources.get("model", "default")  # the model is what was written
    if source.startswith("prompt"):
        return Where(prompt.doc, (key,)), ""
    if source.startswith("packet"):
        return Where(packet.doc, (key,)), ""
    return prompt.file, f" (set by {source or 'default'})"
