"""Shim: the code location moved to awp_pipelines/orchestration/definitions.py. A workspace.yaml written
before the move still names `module_name: awp_pipelines.definitions` (relayout: keep), so this path stays."""

from awp_pipelines.orchestration.definitions import build_definitions, defs

__all__ = ["build_definitions", "defs"]
