"""Which adapter runs a provider kind. CLI and HTTP adapters come with the providers issue."""

from __future__ import annotations

from awp_pipelines.catalog import ProviderSpec
from awp_pipelines.errors import PacketError
from awp_pipelines.providers.base import ProviderAdapter
from awp_pipelines.providers.simulated import SimulatedProvider


def adapter_for(spec: ProviderSpec) -> ProviderAdapter:
    if spec.kind == "simulated":
        return SimulatedProvider()
    raise PacketError("resources/providers.yaml", f"provider kind '{spec.kind}' has no adapter yet",
                      hint="run with --provider simulated until the real provider adapters land")
