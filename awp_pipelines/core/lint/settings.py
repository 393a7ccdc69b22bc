"""Prompt Runner settings a prompt's providers ignore (providers/support.py): reported with key and line."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from awp_pipelines.core.packet.packet import Prompt
from awp_pipelines.core.packet.yamlsrc import YamlDoc
from awp_pipelines.core.planning.plan import PromptPlan
from awp_pipelines.core.providers.support import HONOURED_BY, NOT_PASSED, unsupported

from .context import LintContext
from .where import Where

_TOP_KEYS = ("adapter_opts", *(k for k in (*HONOURED_BY, *NOT_PASSED) if "." not in k))


def lint_prompt(ctx: LintContext, prompt: Prompt, plan: PromptPlan) -> None:
    """Each setting written in the manifest or the prompt that one of the prompt's providers ignores."""
    providers = [plan.provider, *(t.provider for t in plan.fallback)]
    for doc, data in ((ctx.packet.doc, ctx.packet.manifest), (prompt.doc, prompt.front)):
        for key in _written(doc, data):
            for name in dict.fromkeys(providers):
                spec = ctx.catalog.providers.get(name)
                why = unsupported(spec.kind, key) if spec else None
                if why:
                    ctx.add("unsupported_setting", Where(doc, tuple(key.split("."))),
                            f"'{key}' is not honoured by provider {name} ({spec.kind if spec else '?'}): {why}",
                            hint="remove it, or run the prompt on a provider that honours it")


def _written(doc: YamlDoc, data: Any) -> Iterator[str]:
    """The dotted settings written in `doc` (adapter_opts' own keys one by one)."""
    for key in _TOP_KEYS:
        if key in data.model_fields_set and getattr(data, key) is not None:
            if key == "adapter_opts":
                yield from (f"adapter_opts.{sub}" for sub in getattr(data, key))
            else:
                yield key
