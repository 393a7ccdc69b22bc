"""What every lint rule reads (the packet, the catalog, the plan) and the findings it adds to."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from awp_pipelines.core.packet.packet import Packet
from awp_pipelines.core.packet.providers_config import Catalog
from awp_pipelines.core.planning.plan import PacketPlan

from .report import Finding, finding
from .where import Where


@dataclass
class LintContext:
    packet: Packet
    catalog: Catalog
    plan: PacketPlan
    findings: list[Finding] = field(default_factory=list)

    def add(self, kind: str, where: Where | Path, message: str, hint: str | None = None) -> None:
        if isinstance(where, Path):
            self.findings.append(finding(kind, where, message, hint=hint))
        else:
            self.findings.append(finding(kind, where.doc.file, message, line=where.line, key=where.key, hint=hint))

    def known_repos(self) -> str:
        """A hint listing the repos the manifest declares."""
        return f"declared repos: {', '.join(self.packet.repos) or 'none'}"
