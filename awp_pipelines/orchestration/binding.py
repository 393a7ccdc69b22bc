"""A packet bound to its resolved plans: what the builder, the compute, the sensor and `awp run` share.

The plan is resolved once, when the definitions are built (by `awp run` with its CLI flags); the compute
and the sensor read the resolved targets from here, never by resolving the plan again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from dagster import AssetKey

from awp_pipelines.catalog import Catalog
from awp_pipelines.packet import Packet
from awp_pipelines.plan import PacketPlan, PlanContext, PromptPlan, build_plan
from awp_pipelines.policy import Chain, chain_of
from awp_pipelines.selection import Selection


@dataclass(frozen=True)
class PacketBinding:
    packet: Packet
    plans: Mapping[str, PromptPlan]
    chains: Mapping[str, Chain]  # prompt id → primary target with its accounts, then the fallback chain
    keys: Mapping[AssetKey, str]  # asset key → prompt id
    catalog: Catalog | None = None  # every account's credential is kept out of what an Attempt stores

    def key(self, prompt_id: str) -> AssetKey:
        return next(k for k, pid in self.keys.items() if pid == prompt_id)

    @classmethod
    def resolve(cls, packet: Packet, catalog: Catalog, keys: Mapping[AssetKey, str],
                context: PlanContext | None = None, plan: PacketPlan | None = None) -> PacketBinding:
        """`plan`: the whole packet's plan when the caller resolved it already (`awp run`), else resolved here."""
        plan = plan or build_plan(packet, context or PlanContext(catalog=catalog), Selection())
        plans = {p.id: p for p in plan.prompts}
        chains = {pid: chain_of(p.provider, p.model, p.effort, catalog.accounts_of(p.accounts, p.provider),
                                p.fallback, p.rotation, p.probe) for pid, p in plans.items()}
        return cls(packet, plans, chains, dict(keys), catalog)

    @classmethod
    def of(cls, packet: Packet, catalog: Catalog, context: PlanContext | None = None,
           plan: PacketPlan | None = None) -> PacketBinding:
        """With the default asset keys (`[<packet>, <prompt>]`): what the CLI's readers need."""
        from awp_pipelines.orchestration.naming import prompt_key

        return cls.resolve(packet, catalog, {prompt_key(packet, p.id): p.id for p in packet.prompts}, context, plan)
