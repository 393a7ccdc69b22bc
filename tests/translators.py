"""A team's own translator, as a project would write one: its asset keys under `team/`, and every prompt of a
packet on one work-tree pool (its repos share a volume, say). Named by dotted path in tests
(`translators.TeamTranslator`), as a component's YAML or `awp --translator` names it."""

from __future__ import annotations

import os

from dagster import AssetKey, AssetSpec

from awp_pipelines.core.packet.packet import Packet, Prompt
from awp_pipelines.core.planning.plan import PromptPlan
from awp_pipelines.orchestration.compile.translator import PacketTranslator

TEAM_POOL = "team_trees"


class TeamTranslator(PacketTranslator):
    def get_asset_spec(self, packet: Packet, prompt: Prompt, plan: PromptPlan) -> AssetSpec:
        spec = super().get_asset_spec(packet, prompt, plan)
        return spec.replace_attributes(key=AssetKey(["team", *spec.key.path]), group_name="team")

    def get_pool(self, packet: Packet, prompt: Prompt) -> str:
        return TEAM_POOL


class TeamKeys(PacketTranslator):
    """Only the keys are the team's: the work-tree pools stay AWP's, so prompts on disjoint repos overlap."""

    def asset_key(self, packet: Packet, prompt: Prompt) -> AssetKey:
        return AssetKey(["team", *super().asset_key(packet, prompt).path])


class RecordingKeys(PacketTranslator):
    """AWP's own keys and pools; each key it makes (a build of the packet's assets) appends `<pid> <packet>` to
    the file named by AWP_TEST_BUILDS, so a test sees which processes built a packet's job."""

    def asset_key(self, packet: Packet, prompt: Prompt) -> AssetKey:
        log = os.environ.get("AWP_TEST_BUILDS")
        if log:
            with open(log, "a", encoding="utf-8") as out:
                out.write(f"{os.getpid()} {packet.name}\n")
        return super().asset_key(packet, prompt)
