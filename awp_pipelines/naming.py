"""Dagster names for packet things: groups, asset keys, jobs (Dagster allows [A-Za-z0-9_] in names)."""

import re

from dagster import AssetKey

from awp_pipelines.packet import Packet

_NAME = re.compile(r"[^A-Za-z0-9_]")


def dagster_name(text: str) -> str:
    """Dagster names allow [A-Za-z0-9_]: `authoring-packet` becomes `authoring_packet`."""
    return _NAME.sub("_", text)


def prompt_key(packet: Packet, prompt_id: str) -> AssetKey:
    return AssetKey([dagster_name(packet.name), dagster_name(prompt_id)])


def job_name(packet: Packet) -> str:
    return f"packet__{dagster_name(packet.name)}"


