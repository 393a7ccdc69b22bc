"""Helpers for the provider tests: requests against the fake CLIs in ./fakes, read back as events."""

from __future__ import annotations

import os
from pathlib import Path

from awp_pipelines.core.packet.providers_config import AccountBinding, ProviderSpec
from awp_pipelines.core.providers.base import ProviderRequest
from awp_pipelines.core.records.events import EventSink

FAKES = Path(__file__).resolve().parent / "fakes"
KIND_SPECS = {
    "claude_code": ProviderSpec(kind="claude_code", command=str(FAKES / "claude"), credential_env="ANTHROPIC_API_KEY",
                                config_dir_env="CLAUDE_CONFIG_DIR"),
    "codex": ProviderSpec(kind="codex", command=str(FAKES / "codex"), credential_env="OPENAI_API_KEY",
                          config_dir_env="CODEX_HOME"),
    "opencode": ProviderSpec(kind="opencode", command=str(FAKES / "opencode"), credential_env="OPENCODE_API_KEY"),
    "gemini": ProviderSpec(kind="gemini", command=str(FAKES / "gemini"), credential_env="GEMINI_API_KEY",
                           config_dir_env="GEMINI_CLI_HOME"),
    "amp": ProviderSpec(kind="amp", command=str(FAKES / "amp"), credential_env="AMP_API_KEY",
                        config_dir_env="XDG_CONFIG_HOME"),
}


def fake_claude_catalog(accounts: dict[str, dict[str, str]]) -> dict[str, object]:
    """A providers.yaml (as data) whose `claude` provider is the fake CLI, with these accounts."""
    return {"providers": {"claude": {"kind": "claude_code", "command": str(FAKES / "claude"),
                                     "credential_env": "ANTHROPIC_API_KEY", "config_dir_env": "CLAUDE_CONFIG_DIR",
                                     "models": ["haiku"]}},
            "accounts": accounts}


def account(tmp: Path, name: str = "acct-a", var: str = "AWP_TEST_ACCT_A_KEY") -> AccountBinding:
    return AccountBinding(name=name, provider="p", credential_env=var, config_dir=str(tmp / "accounts" / name))


def request(tmp: Path, prompt: str, credential: str, *, timeout_ms: int = 20_000, idle_ms: int | None = None,
            binding: AccountBinding | None = None, **more: object) -> ProviderRequest:
    binding = binding or account(tmp)
    env = {k: os.environ[k] for k in ("PATH", "HOME") if k in os.environ}
    env[binding.credential_env or "X"] = credential
    work = tmp / "work"
    work.mkdir(exist_ok=True)
    return ProviderRequest(prompt_text=prompt, cwd=work, timeout_ms=timeout_ms, idle_timeout_ms=idle_ms,
                           env=env, account=binding, **more)  # type: ignore[arg-type]


def sink(tmp: Path, secrets: tuple[str, ...] = ()) -> EventSink:
    return EventSink(tmp / "events.jsonl", "att-1", secrets=secrets)


def types(s: EventSink) -> list[str]:
    return [e["type"] for e in s.events()]


NPM_CACHE = Path(os.environ.get("AWP_NPM_CACHE", Path.home() / ".cache" / "awp" / "npm"))


def real_cli(name: str) -> Path:
    """The real CLI installed by install_real_clis.sh; skips the test where it is absent, fails in CI."""
    import pytest

    binary = NPM_CACHE / "node_modules" / ".bin" / name
    if not binary.exists():
        msg = f"real {name} not installed at {binary}: run bash tests/providers/install_real_clis.sh"
        if os.environ.get("CI", "").strip().lower() in {"true", "1", "yes"}:
            pytest.fail(msg)
        pytest.skip(msg)
    return binary
