"""Which adapter runs a provider kind."""

from __future__ import annotations

from awp_pipelines.core.packet.errors import PacketError
from awp_pipelines.core.packet.providers_config import ProviderSpec
from awp_pipelines.core.providers.amp import AmpAdapter
from awp_pipelines.core.providers.base import ProviderAdapter
from awp_pipelines.core.providers.claude_code import ClaudeCodeAdapter
from awp_pipelines.core.providers.cli import CliAdapter
from awp_pipelines.core.providers.codex import CodexAdapter
from awp_pipelines.core.providers.command import CommandAdapter
from awp_pipelines.core.providers.gemini import GeminiAdapter
from awp_pipelines.core.providers.openai_http import OpenAIHttpAdapter
from awp_pipelines.core.providers.opencode import OpenCodeAdapter
from awp_pipelines.core.providers.simulated import SimulatedProvider

CLI_ADAPTERS: dict[str, type[CliAdapter]] = {
    "claude_code": ClaudeCodeAdapter,
    "codex": CodexAdapter,
    "opencode": OpenCodeAdapter,
    "gemini": GeminiAdapter,
    "amp": AmpAdapter,
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
