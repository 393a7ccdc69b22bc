"""A packet bound to its resolved plans: what the builder, the compute, the sensor and `awp run` share.

The plan is resolved once, when the definitions are built (by `awp run` with its CLI flags); the compute
and the sensor read the resolved targets from here, never by resolving the plan again. The asset keys and
work-tree pools are the translator's (translator.py), asked once here: every reader takes them from the
binding, so a custom key or pool holds for status, watch, `--remaining` and the leases alike.

The resolved plan is kept as its JSON and decoded when first read: a code location binds thousands of
prompts, most of whose plans no compute or sensor of that process ever reads (as objects, about 6 KB each).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

from dagster import AssetKey, AssetSpec

from awp_pipelines.core.decisions.intent import intent_of
from awp_pipelines.core.decisions.policy import Chain, chain_of
from awp_pipelines.core.packet.packet import Packet
from awp_pipelines.core.packet.providers_config import Catalog
from awp_pipelines.core.planning.plan import PacketPlan, PlanContext, PromptPlan, build_plan
from awp_pipelines.core.planning.selection import Selection
from awp_pipelines.orchestration.compile.translator import PacketTranslator


@dataclass(frozen=True)
class PacketBinding:
    packet: Packet
    plan_json: bytes  # the resolved plan (PacketPlan), as JSON
    specs: Mapping[str, AssetSpec]  # prompt id → the translator's asset spec
    pools: Mapping[str, str]  # prompt id → the translator's work-tree pool
    catalog: Catalog | None = None  # every account's credential is kept out of what an Attempt stores
    resource: str = ""  # the key of the packet's AwpResource in its definitions

    @cached_property
    def plans(self) -> Mapping[str, PromptPlan]:
        """prompt id → its resolved plan."""
        return {p.id: p for p in PacketPlan.model_validate_json(self.plan_json).prompts}

    @cached_property
    def chains(self) -> Mapping[str, Chain]:
        """prompt id → primary target with its accounts, then the fallback chain, kept to what its agent allows."""
        catalog = self.catalog or Catalog()
        return {pid: chain_of(p.provider, p.model, p.effort, catalog.accounts_of(p.accounts, p.provider),
                              p.fallback, p.rotation, p.probe, (p.agent, p.agent_providers, p.agent_models))
                for pid, p in self.plans.items()}

    @cached_property
    def intents(self) -> Mapping[str, str]:
        """prompt id → the fingerprint of its definition (intent.py): part of its AgentRun's identity."""
        return {p.id: intent_of(self.packet, p) for p in self.packet.prompts}

    @cached_property
    def keys(self) -> Mapping[AssetKey, str]:
        """asset key → prompt id."""
        return {spec.key: pid for pid, spec in self.specs.items()}

    def key(self, prompt_id: str) -> AssetKey:
        return self.specs[prompt_id].key

    def sharing_pool(self, prompt_id: str) -> list[str]:
        """The prompts on the work trees of `prompt_id` (itself included)."""
        return [p for p, pool in self.pools.items() if pool == self.pools[prompt_id]]

    @classmethod
    def of(cls, packet: Packet, catalog: Catalog, context: PlanContext | None = None,
           translator: PacketTranslator | None = None, plan: PacketPlan | None = None,
           resource: str = "") -> PacketBinding:
        """The plan resolved (with `context`'s overrides; `plan`: the whole packet's plan when the caller
        resolved it already, as `awp run` does), the keys and pools `translator` gives (default:
        `[<packet>, <prompt>]` and the repo pools)."""
        translator = translator or PacketTranslator()
        plan = plan or build_plan(packet, context or PlanContext(catalog=catalog), Selection())
        plans = {p.id: p for p in plan.prompts}
        specs = {p.id: translator.get_asset_spec(packet, p, plans[p.id]) for p in packet.prompts}
        pools = {p.id: translator.get_pool(packet, p) for p in packet.prompts}
        return cls(packet, plan.model_dump_json().encode(), specs, pools, catalog, resource)
