"""What the stored history says about a packet's prompts: the latest Attempt of each."""

from __future__ import annotations

from pathlib import Path

from dagster import DagsterInstance

from awp_pipelines import tags
from awp_pipelines.attempts import AttemptRecord
from awp_pipelines.orchestration.history import packet_run_history, plain_value
from awp_pipelines.orchestration.instance import open_instance
from awp_pipelines.orchestration.naming import prompt_key
from awp_pipelines.packet import Packet


def latest_results(packet: Packet, instance: DagsterInstance) -> dict[str, str]:
    """prompt id → the result of its latest materialized Attempt (completed or verification_failed)."""
    results: dict[str, str] = {}
    for prompt in packet.prompts:
        records = instance.fetch_materializations(prompt_key(packet, prompt.id), limit=1).records
        if records and records[0].asset_materialization is not None:
            result = plain_value(records[0].asset_materialization.metadata.get(tags.RESULT))
            if result:
                results[prompt.id] = str(result)
    return results


def completed_prompts(packet: Packet, home: Path | None = None) -> set[str]:
    instance = open_instance(packet.root, home)
    try:
        return {pid for pid, result in latest_results(packet, instance).items() if result == "completed"}
    finally:
        instance.dispose()


def agent_run_records(instance: DagsterInstance, packet: Packet, packet_run: str,
                      prompt_id: str) -> list[AttemptRecord]:
    """The stored records of one AgentRun, oldest first."""
    keys = {prompt_key(packet, p.id): p.id for p in packet.prompts}
    history = packet_run_history(instance, packet_run, keys).agent_runs.get(prompt_id)
    return history.records if history else []
