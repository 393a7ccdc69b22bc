"""Packet → Dagster specs (the shape of dagster-dbt's `DagsterDbtTranslator`): `get_asset_spec` gives a
prompt's asset spec, `get_check_specs` its blocking checks, `get_pool` its work-tree pool. Each is built from
one overridable method per field; subclass `PacketTranslator` to change keys, groups, descriptions or pools,
and pass it to `packet_assets`, the SDK (`translator=`), `awp --translator`, or `PacketComponent`'s `translator`
attribute.

The translator is authoritative: the builder asks it once per prompt, the binding (binding.py) keeps the keys
and pools it gave, and every reader (status, watch, `--remaining`, the leases, the sensor) takes them from the
binding, never from `naming.prompt_key` or `repo_pools` directly."""

from __future__ import annotations

import hashlib
import importlib
import re
import warnings

from dagster import (
    AssetCheckSpec,
    AssetKey,
    AssetSpec,
    BetaWarning,
    CodeReferencesMetadataValue,
    LocalFileCodeReference,
    MetadataValue,
)

from awp_pipelines.core.packet.errors import PacketError
from awp_pipelines.core.packet.packet import Packet, Prompt
from awp_pipelines.core.planning.plan import PromptPlan
from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.core.verifiers.items import contract_items
from awp_pipelines.dagster_compat.tags import CODE_REFERENCES_KEY
from awp_pipelines.orchestration.compile.naming import dagster_name, prompt_key

_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*)$")
MAX_KINDS = 3  # Dagster's limit per asset


class PacketTranslator:
    def get_asset_spec(self, packet: Packet, prompt: Prompt, plan: PromptPlan) -> AssetSpec:
        """The prompt's asset: its key is what the binding maps to the prompt (every reader finds it there)."""
        return AssetSpec(key=self.asset_key(packet, prompt), deps=self.deps(packet, prompt),
                         group_name=self.group_name(packet), description=self.description(packet, prompt),
                         kinds=self.kinds(packet, plan), code_version=self.code_version(packet, prompt),
                         metadata=self.metadata(packet, prompt), tags=self.tags(packet, prompt),
                         owners=self.owners(packet, prompt))

    def get_check_specs(self, asset: AssetSpec, packet: Packet, prompt: Prompt) -> list[AssetCheckSpec]:
        """One blocking check per verifier item, on `asset` (this translator's spec of the prompt)."""
        contract = prompt.front.verify
        return [AssetCheckSpec(name=item.check_name, asset=asset.key, blocking=True,
                               description=item.description or item.label)
                for item in (contract_items(contract) if contract is not None else [])]

    def get_pool(self, packet: Packet, prompt: Prompt) -> str:
        """The prompt's work-tree pool: prompts with one pool never run at once (the op pool and the tree
        lease both use it). Default: prompts whose target repos overlap share one."""
        known = getattr(self, "_pools", None)  # the last packet's, asked once per prompt of it
        if known is None or known[0] is not packet:
            known = self._pools = (packet, repo_pools(packet))
        return known[1][prompt.id]

    def asset_key(self, packet: Packet, prompt: Prompt) -> AssetKey:
        return prompt_key(packet, prompt.id)

    def asset_keys(self, packet: Packet) -> dict[AssetKey, str]:
        """asset key → prompt id, by `asset_key` (what a reader with no plan at hand needs)."""
        return {self.asset_key(packet, p): p.id for p in packet.prompts}

    def group_name(self, packet: Packet) -> str:
        return dagster_name(packet.name)

    def description(self, packet: Packet, prompt: Prompt) -> str:
        """The prompt's title and its first paragraph of prose: no raw Markdown headings."""
        return f"{prompt.name}\n\n{first_paragraph(prompt.body)}".strip()

    def deps(self, packet: Packet, prompt: Prompt) -> list[AssetKey]:
        """Upstream assets outside the packet (none by default). The prompt's upstream prompts are added by
        the binding, under the keys this translator gave them, whichever method set those keys."""
        return []

    def kinds(self, packet: Packet, plan: PromptPlan) -> set[str]:
        """The provider, then the repos it works in, then `agent`: Dagster shows at most three."""
        ordered = [plan.provider, *(r.name for r in plan.repos), "agent"]
        return set(list(dict.fromkeys(ordered))[:MAX_KINDS])

    def owners(self, packet: Packet, prompt: Prompt) -> list[str]:
        return list(packet.manifest.owners)

    def tags(self, packet: Packet, prompt: Prompt) -> dict[str, str]:
        return {tags.ROLE: prompt.front.agent or "coder"}

    def code_version(self, packet: Packet, prompt: Prompt) -> str:
        """Changes when the prompt file (body and contract) changes: the UI shows the asset as changed."""
        return hashlib.sha256(prompt.file.read_bytes()).hexdigest()[:16]

    def metadata(self, packet: Packet, prompt: Prompt) -> dict[str, object]:
        # The code reference opens the prompt file in an editor, so it is the file on this machine.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", BetaWarning)  # the UI's own field; its beta status is Dagster's
            reference = CodeReferencesMetadataValue(code_references=[LocalFileCodeReference(
                file_path=str(packet.resolved_file(prompt)), line_number=1, label="prompt file")])
        return {tags.PROMPT_FILE: MetadataValue.path(prompt_file_path(packet, prompt)),
                CODE_REFERENCES_KEY: reference}


def load_translator(translator: PacketTranslator | str | None) -> PacketTranslator:
    """A translator, or the dotted path of a `PacketTranslator` subclass (`pkg.module.Class` or
    `pkg.module:Class`) as a component's YAML or `awp --translator` names it; None: the default."""
    if translator is None or isinstance(translator, PacketTranslator):
        return translator or PacketTranslator()
    module, _, name = translator.replace(":", ".").rpartition(".")
    try:
        found = getattr(importlib.import_module(module), name) if module else None
    except ImportError as err:
        raise PacketError(translator, f"the translator does not import: {err}",
                          hint="name a PacketTranslator subclass as package.module.Class") from None
    if not (isinstance(found, type) and issubclass(found, PacketTranslator)):
        raise PacketError(translator, "the translator is not a PacketTranslator subclass",
                          hint="name a PacketTranslator subclass as package.module.Class")
    return found()


def translator_path(translator: PacketTranslator) -> str:
    """The dotted path `load_translator` takes back: a spawned step process builds the same job with it."""
    return f"{type(translator).__module__}:{type(translator).__qualname__}"


def prompt_file_path(packet: Packet, prompt: Prompt) -> str:
    """Relative to the packet's folder: the same on every machine."""
    try:
        return f"{packet.root.name}/{prompt.file.relative_to(packet.root)}"
    except ValueError:
        return prompt.file.name


def first_paragraph(body: str) -> str:
    lines: list[str] = []
    for line in body.strip().splitlines():
        if _HEADING.match(line):
            if lines:
                break
            continue
        if not line.strip():
            if lines:
                break
            continue
        lines.append(line.strip())
    return " ".join(lines)


def repo_pools(packet: Packet) -> dict[str, str]:
    """prompt id → concurrency pool. Prompts whose target repos overlap (transitively) share one pool, so
    two agents never edit one work tree at once; prompts on disjoint repos may run in parallel."""
    parent: dict[str, str] = {}

    def find(name: str) -> str:
        while parent.setdefault(name, name) != name:
            name = parent[name]
        return name

    targets = {p.id: p.front.targets or [packet.default_repo or "packet"] for p in packet.prompts}
    for names in targets.values():
        for other in names[1:]:
            parent[find(other)] = find(names[0])
    return {pid: f"awp_{dagster_name(packet.name)}_{dagster_name(find(names[0]))}" for pid, names in targets.items()}
