"""AWP Pipelines: work packets for AI coding agents, compiled into Dagster."""

__version__ = "0.1.0"
