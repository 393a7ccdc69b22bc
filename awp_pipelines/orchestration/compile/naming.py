"""Dagster names for packet things: groups, asset keys, jobs, sensors (Dagster allows [A-Za-z0-9_])."""

import re

from dagster import AssetKey

from awp_pipelines.core.packet.packet import Packet, Prompt

_NAME = re.compile(r"[^A-Za-z0-9_]")


def dagster_name(text: str) -> str:
    """Dagster names allow [A-Za-z0-9_]: `authoring-packet` becomes `authoring_packet`."""
    return _NAME.sub("_", text)


def prompt_asset_name(prompt: Prompt) -> str:
    """`01_write_greeting`: the id first (the graph sorts by it), then what the prompt does."""
    return dagster_name(prompt.id if prompt.slug in ("", prompt.id) else f"{prompt.id}_{prompt.slug}")


def prompt_key(packet: Packet, prompt_id: str) -> AssetKey:
    return AssetKey([dagster_name(packet.name), prompt_asset_name(packet.prompt(prompt_id))])


def job_name(packet: Packet) -> str:
    return f"packet__{dagster_name(packet.name)}"


# The code location's one recovery sensor, for all its packets (sensors.py).
RECOVERY_SENSOR = "awp_recovery"


def recovery_sensor_name(packet: Packet) -> str:
    """The recovery sensor of a packet alone in its definitions (a `PacketComponent`, `awp run`): beside
    another packet's, its name must differ."""
    return f"{job_name(packet)}__recovery"
