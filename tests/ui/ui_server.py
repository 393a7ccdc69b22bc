"""What the `dagster_ui` fixture hands a test: the served UI and the demo run behind it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class DagsterUi:
    url: str
    home: Path
    project: Path
    run_output: dict[str, Any] = field(default_factory=dict)  # `awp run --json` of the demo

    @property
    def packet(self) -> Path:
        return self.project / "assets" / "demo"

    def attempts(self) -> list[str]:
        """The attempt ids the demo's final outcomes name (one per prompt)."""
        return [p["attempt"] for p in self.run_output.get("prompts", [])]
