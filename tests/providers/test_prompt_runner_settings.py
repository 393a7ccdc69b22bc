"""Prompt Runner settings are honoured by the providers that support them, or `awp lint` names each one it
does not pass on, with key, file and line; `cli_confirmation` checks the model the provider reported."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import responses
import yaml

from awp_pipelines.core.engine.confirmation import confirm, confirmation_failure, model_confirms
from awp_pipelines.core.lint import lint_packet
from awp_pipelines.core.packet.packet import load_packet
from awp_pipelines.core.packet.providers_config import BUILTIN, Catalog, ProviderSpec
from awp_pipelines.core.planning.plan import PlanContext, build_plan
from awp_pipelines.core.providers.base import ProviderOutcome, ProviderRequest
from awp_pipelines.core.providers.openai_http import OpenAIHttpAdapter
from awp_pipelines.core.records.events import EventSink

CATALOG = Catalog(providers={"router": ProviderSpec(kind="openai_http", base_url="http://llm.test/v1")}
                  ).merged_over(BUILTIN)


def _packet(root: Path, manifest: dict[str, Any], front: dict[str, Any] | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "packet.yaml").write_text(yaml.safe_dump({"name": "settings", "repos": {"app": {"path": "./app",
                                                                                          "default": True}},
                                                      **manifest}, sort_keys=False))
    (root / "prompts").mkdir()
    text = yaml.safe_dump({"verify": {"files_exist": ["x"], "commands": [{"exec": "true", "timeout_ms": 1000}]},
                           **(front or {})}, sort_keys=False)
    (root / "prompts" / "01_work.prompt.md").write_text(f"---\n{text}---\n# Work\n")
    return root


def _line(file: Path, text: str) -> int:
    return next(n for n, line in enumerate(file.read_text().splitlines(), start=1) if line.lstrip().startswith(text))


def _unsupported(root: Path) -> list[tuple[str | None, str, int | None]]:
    report = lint_packet(root, CATALOG)
    return sorted((f.key, Path(f.file).name, f.line) for f in report.findings if f.kind == "unsupported_setting")


def test_lint_names_each_setting_the_provider_ignores_with_its_key_and_line(tmp_path: Path) -> None:
    root = _packet(tmp_path / "p", {"provider": "codex", "model": "gpt-5", "system_prompt": "Be brief.",
                                    "log_mode": "verbose", "adapter_opts": {"timeout": "5m", "retries": 2},
                                    "recovery": {"max_steers": 5}},
                   {"thinking": True, "cli_confirmation": "require"})
    manifest, prompt = root / "packet.yaml", root / "prompts" / "01_work.prompt.md"
    assert _unsupported(root) == sorted([
        ("system_prompt", "packet.yaml", _line(manifest, "system_prompt:")),
        ("log_mode", "packet.yaml", _line(manifest, "log_mode:")),
        ("adapter_opts.retries", "packet.yaml", _line(manifest, "retries:")),
        ("thinking", "01_work.prompt.md", _line(prompt, "thinking:")),
    ])  # adapter_opts.timeout, cli_confirmation and recovery.max_steers are honoured by every provider


def test_lint_accepts_the_system_prompts_where_the_provider_takes_them(tmp_path: Path) -> None:
    for name, provider in (("claude", "claude"), ("http", "router"), ("sim", "simulated")):
        root = _packet(tmp_path / name, {"provider": provider, "model": "m", "system_prompt": "Be brief.",
                                         "append_system_prompt": "Cite files."})
        assert _unsupported(root) == [], name


def test_lint_warns_that_a_command_agent_cannot_confirm_its_model(tmp_path: Path) -> None:
    catalog = Catalog(providers={"script": ProviderSpec(kind="command", command="true")}).merged_over(BUILTIN)
    root = _packet(tmp_path / "p", {"provider": "script", "model": "m", "cli_confirmation": "require"})
    [found] = [f for f in lint_packet(root, catalog).findings if f.kind == "unsupported_setting"]
    assert found.key == "cli_confirmation" and "reports no model" in found.message


def test_claude_code_gets_both_system_prompts_in_its_argv(tmp_path: Path) -> None:
    root = _packet(tmp_path / "p", {"provider": "claude", "model": "haiku", "system_prompt": "Be brief.",
                                    "append_system_prompt": "Cite files."})
    [prompt] = build_plan(load_packet(root), PlanContext(catalog=BUILTIN)).prompts
    argv = prompt.argv or []
    assert argv[argv.index("--system-prompt") + 1] == "Be brief."
    assert argv[argv.index("--append-system-prompt") + 1] == "Cite files."


@responses.activate
def test_chat_completions_send_the_system_prompts_as_system_messages(tmp_path: Path) -> None:
    responses.post("http://llm.test/v1/chat/completions", json={
        "id": "c1", "model": "m", "choices": [{"message": {"role": "assistant", "content": "ok"}}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1}})
    request = ProviderRequest(prompt_text="Do it.", cwd=tmp_path, timeout_ms=10_000, model="m",
                              system_prompt="Be brief.", append_system_prompt="Cite files.")
    outcome = OpenAIHttpAdapter(CATALOG.providers["router"], "router").run(
        request, EventSink(tmp_path / "e.jsonl", "a1"))
    assert outcome.ok and outcome.reported_model == "m"
    body = json.loads(responses.calls[0].request.body or b"{}")
    assert body["messages"] == [{"role": "system", "content": "Be brief."},
                                {"role": "system", "content": "Cite files."}, {"role": "user", "content": "Do it."}]


def test_adapter_opts_timeout_is_the_bound_when_timeout_is_unset(tmp_path: Path) -> None:
    root = _packet(tmp_path / "a", {"provider": "simulated", "adapter_opts": {"timeout": "5m"}})
    [prompt] = build_plan(load_packet(root), PlanContext(catalog=BUILTIN)).prompts
    assert prompt.bounds.timeout_ms == 300_000 and "adapter_opts.timeout" in prompt.sources["timeout"]
    root = _packet(tmp_path / "b", {"provider": "simulated", "timeout": "2m", "adapter_opts": {"timeout": "5m"}})
    [prompt] = build_plan(load_packet(root), PlanContext(catalog=BUILTIN)).prompts
    assert prompt.bounds.timeout_ms == 120_000


@pytest.mark.parametrize(("asked", "reported", "confirms"), [
    ("claude-haiku-4-5", "claude-haiku-4-5", True),
    ("claude-haiku-4-5", "claude-haiku-4-5-20251001", True),  # the dated form of the name asked for
    ("haiku", "claude-haiku-4-5-20251001", True),  # the CLI's model for an alias
    ("opencode/deepseek-v4-flash-free", "deepseek-v4-flash-free", True),  # without its routing prefix
    ("haiku", "claude-sonnet-4-5", False),
    ("gpt-5", "gpt-5-2025-08-07", True), ("gpt-5", "gpt-5-mini", False), ("gpt-5-mini", "gpt-5", False),
    ("o3", "gpt-4o", False),
])
def test_a_reported_model_confirms_the_one_asked_for(asked: str, reported: str, confirms: bool) -> None:
    assert model_confirms(asked, reported) is confirms


def test_cli_confirmation_require_fails_warn_records_off_ignores(tmp_path: Path) -> None:
    sink = EventSink(tmp_path / "e.jsonl", "a1")
    sonnet = ProviderOutcome(ok=True, reported_model="claude-sonnet-4-5")
    silent = ProviderOutcome(ok=True)
    failed = confirm(sonnet, "require", "haiku", sink).failure
    assert failed is not None and failed.failure_class == "cli_confirmation_mismatch" and not failed.retryable
    missing = confirm(silent, "require", "haiku", sink).failure
    assert missing is not None and missing.failure_class == "cli_confirmation_missing"
    assert confirm(sonnet, "warn", "haiku", sink).ok and confirm(sonnet, None, "haiku", sink).ok
    assert confirm(sonnet, "off", "haiku", sink).ok
    warned = [e for e in sink.events() if e["type"] == "error_occurred"]
    assert [e["failure_class"] for e in warned] == ["cli_confirmation_mismatch"]
    assert confirmation_failure("haiku", "claude-haiku-4-5") is None


def test_awp_plan_shows_the_model_check(tmp_path: Path) -> None:
    from awp_pipelines.cli.plan_cmd import plan_rows

    root = _packet(tmp_path / "p", {"provider": "simulated", "model": "simulated-demo", "cli_confirmation": "require"})
    [prompt] = build_plan(load_packet(root), PlanContext(catalog=BUILTIN)).prompts
    rows = {label: str(text) for label, text in plan_rows(prompt)}
    assert rows["confirm"] == "cli_confirmation require: the model reported must be simulated-demo"
    off = _packet(tmp_path / "q", {"provider": "simulated", "cli_confirmation": "off"})
    [prompt] = build_plan(load_packet(off), PlanContext(catalog=BUILTIN)).prompts
    assert "confirm" not in dict(plan_rows(prompt))
