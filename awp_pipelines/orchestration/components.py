"""`PacketComponent`: declare a packet in a `dg` project's defs.yaml (the registry module of pyproject's
[tool.dg.project]; the component itself is built by the one shared builder).

    type: awp_pipelines.orchestration.components.PacketComponent
    attributes:
      path: ../../packets/release-notes     # packet folder, relative to this defs.yaml
      providers_file: ../../resources/providers.yaml
      translator: my_project.translation.TeamTranslator   # optional: a PacketTranslator subclass

The translator gives the asset keys, groups and work-tree pools (as `DbtProjectComponent`'s `translator`):
a subclass of `PacketComponent` may instead override `get_translator`. The CLI reads that packet's runs with
the same translator (`awp status --translator`, AWP_TRANSLATOR).
"""

from __future__ import annotations

from pathlib import Path

from dagster import Component, ComponentLoadContext, Definitions, Model, Resolvable

from awp_pipelines.core.packet.packet import load_packet
from awp_pipelines.core.packet.providers_config import load_catalog
from awp_pipelines.orchestration.assets import packet_assets
from awp_pipelines.orchestration.compile.translator import PacketTranslator, load_translator
from awp_pipelines.orchestration.compute.resources import AwpResource


class PacketComponent(Component, Model, Resolvable):
    """One AWP packet: an asset per prompt, a blocking check per verifier item, a `packet__<name>` job and
    its own recovery sensor (`packet__<name>__recovery`). Several components load side by side in one code
    location, each with its sensor: a component sees only its own packet, and a sensor's target jobs are fixed
    when it is built, so one sensor shared by components would need Dagster's private target list changed
    after the fact. A project of many packets loads them as `definitions.py` does (one `awp_recovery` sensor
    for all of them: `assets.location_definitions`)."""

    path: str
    providers_file: str | None = None
    commit: bool = True
    translator: str | None = None  # dotted path of a PacketTranslator subclass

    def get_translator(self) -> PacketTranslator:
        return load_translator(self.translator)

    def build_defs(self, context: ComponentLoadContext) -> Definitions:
        base = Path(context.path)
        providers = (base / self.providers_file).resolve() if self.providers_file else None
        compiled = packet_assets(load_packet(base / self.path), load_catalog(providers),
                                 AwpResource(commit=self.commit), self.get_translator())
        return compiled.definitions()
