"""`PacketComponent`: declare a packet in a `dg` project's defs.yaml.

    type: awp_pipelines.components.PacketComponent
    attributes:
      path: ../../packets/release-notes     # packet folder, relative to this defs.yaml
      providers_file: ../../resources/providers.yaml
"""

from __future__ import annotations

from pathlib import Path

from dagster import Component, ComponentLoadContext, Definitions, Model, Resolvable

from awp_pipelines.catalog import load_catalog
from awp_pipelines.compile import compile_packet
from awp_pipelines.packet import load_packet
from awp_pipelines.resources import RUNTIME_KEY, AwpRuntime, catalog_resources


class PacketComponent(Component, Model, Resolvable):
    """One AWP packet: an asset per prompt, a blocking check per verifier item, a `packet__<name>` job."""

    path: str
    providers_file: str | None = None
    commit: bool = True

    def build_defs(self, context: ComponentLoadContext) -> Definitions:
        base = Path(context.path)
        providers = (base / self.providers_file).resolve() if self.providers_file else None
        catalog = load_catalog(providers)
        compiled = compile_packet(load_packet(base / self.path), catalog)
        runtime = AwpRuntime(commit=self.commit, providers_file=str(providers) if providers else None)
        return Definitions(assets=compiled.assets, jobs=[compiled.job],
                           resources={RUNTIME_KEY: runtime, **catalog_resources(catalog)})
