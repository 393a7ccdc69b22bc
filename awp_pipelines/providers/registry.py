"""Which adapter runs a provider kind."""

from __future__ import annotations

from awp_pipelines.catalog import ProviderSpec
from awp_pipelines.errors import PacketError
from awp_pipelines.providers.base import ProviderAdapter
from awp_pipelines.providers.claude_code import ClaudeCodeAdapter
from awp_pipelines.providers.cli import CliAdapter
from awp_pipelines.providers.codex import CodexAdapter
from awp_pipelines.providers.command import CommandAdapter
from awp_pipelines.providers.gemini import GeminiAdapter
from awp_pipelines.providers.openai_http import OpenAIHttpAdapter
from awp_pipelines.providers.opencode import OpenCodeAdapter
from awp_pipelines.providers.simulated import SimulatedProvider

CLI_ADAPTERS: dict[str, type[CliAdapter]] = {
    "claude_code": ClaudeCodeAdapter,
    "codex": CodexAdapter,
    "opencode": OpenCodeAdapter,
    "gemini": GeminiAdapter,
    "command": CommandAdapter,
}


def adapter_for(spec: ProviderSpec, name: str | None = None) -> ProviderAdapter:
    if spec.kind == "simulated":
        return SimulatedProvider()
    if spec.kind in CLI_ADAPTERS:
        return CLI_ADAPTERS[spec.kind](spec, name)
    if spec.kind == "openai_http":
        return OpenAIHttpAdapter(spec, name)
    raise PacketError("resources/providers.yaml", f"provider kind '{spec.kind}' has no adapter")
