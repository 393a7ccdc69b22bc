"""Shim: `PacketComponent` moved to awp_pipelines/orchestration/components.py. A dg project's defs.yaml written
before the move still says `type: awp_pipelines.components.PacketComponent` (relayout: keep), so this path stays."""

from awp_pipelines.orchestration.components import PacketComponent

__all__ = ["PacketComponent"]
