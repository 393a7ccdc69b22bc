"""The real CLIs against the local fake API (fake_apis.py, "unknown_model": each API's own 404 for a model it does
not serve): each CLI's own wording of the refusal is recognised as a config refusal that no retry changes
(deterministic: not retried, not repaired), whatever the CLI makes of the 404 — Claude Code's "There's an
issue with the selected model", Codex's "does not exist or you do not have access", OpenCode's
`ProviderModelNotFoundError`/"model: X", Gemini's "models/X is not found". And Claude Code without any login."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from fake_apis import fake_api
from provider_helpers import sink
from test_real_claude_code import (
    _providers_file,
    claude,  # noqa: F401  (the fixture)
)
from test_real_claude_code import _run as run_claude
from test_real_codex import _adapter as codex_adapter
from test_real_codex import _request as codex_request
from test_real_codex import codex  # noqa: F401
from test_real_gemini import _run as run_gemini
from test_real_gemini import gemini  # noqa: F401
from test_real_opencode import _run as run_opencode
from test_real_opencode import opencode  # noqa: F401

from awp_pipelines.core.records.failures import FailureEnvelope

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))
from e2e_support import awp, stored_records  # noqa: E402


def _refused(failure: FailureEnvelope | None, cls: str = "provider_config_claim") -> FailureEnvelope:
    assert failure is not None
    assert (failure.failure_class, failure.retryable, failure.repairable) == (cls, False, False), failure
    assert "not retried" in failure.message, failure.message
    return failure


def test_real_claude_unknown_model(tmp_path: Path, claude: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    with fake_api("unknown_model") as server:
        outcome, _, _ = run_claude(tmp_path, claude, server.url, monkeypatch)
    assert "issue with the selected model" in _refused(outcome.failure).message


def test_real_claude_not_logged_in(tmp_path: Path, claude: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    with fake_api("success") as server:
        monkeypatch.setattr("test_real_claude_code.KEY", "")  # the account's variable is empty: no login at all
        outcome, _, _ = run_claude(tmp_path, claude, server.url, monkeypatch)
    assert "Not logged in" in _refused(outcome.failure, "provider_auth_claim").message


def test_real_codex_unknown_model(tmp_path: Path, codex: Path) -> None:  # noqa: F811
    s = sink(tmp_path)
    with fake_api("unknown_model") as server:
        outcome = codex_adapter(codex).run(codex_request(tmp_path, server.url), s)
    assert "does not exist" in _refused(outcome.failure).message


def test_real_opencode_unknown_model(tmp_path: Path, opencode: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    with fake_api("unknown_model") as server:
        outcome, _ = run_opencode(tmp_path, opencode, server.url, monkeypatch, idle_ms=60_000)
    assert "claude-haiku-4-5" in _refused(outcome.failure).message


def test_real_codex_not_logged_in(tmp_path: Path, codex: Path) -> None:  # noqa: F811
    s = sink(tmp_path)
    with fake_api("success") as server:
        request = codex_request(tmp_path, server.url)
        bare = replace(request, env={k: v for k, v in request.env.items() if k != "AWP_REAL_CODEX_KEY"})
        outcome = codex_adapter(codex).run(bare, s)
    assert "Missing environment variable" in _refused(outcome.failure, "provider_auth_claim").message


def test_real_opencode_refused_key(tmp_path: Path, opencode: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    with fake_api("bad_key") as server:
        outcome, _ = run_opencode(tmp_path, opencode, server.url, monkeypatch, idle_ms=60_000)
    assert "invalid x-api-key" in _refused(outcome.failure, "provider_auth_claim").message


def test_real_gemini_not_logged_in(tmp_path: Path, gemini: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    monkeypatch.setattr("test_real_gemini.KEY", "")  # the account's variable is empty: no auth method at all
    with fake_api("success") as server:
        outcome, _, _ = run_gemini(tmp_path, gemini, server.url)
    assert "auth method" in _refused(outcome.failure, "provider_auth_claim").message.lower()


def test_real_gemini_unknown_model(tmp_path: Path, gemini: Path) -> None:  # noqa: F811
    with fake_api("unknown_model") as server:
        outcome, _, _ = run_gemini(tmp_path, gemini, server.url)
    assert "is not found" in _refused(outcome.failure).message


def test_real_gemini_unknown_model_in_googles_other_words(tmp_path: Path, gemini: Path) -> None:  # noqa: F811
    """404 "Requested entity was not found.": its result says `unknown`, its stderr `ModelNotFoundError` (it was
    retried three times as a runtime claim)."""
    with fake_api("entity_not_found") as server:
        outcome, _, _ = run_gemini(tmp_path, gemini, server.url)
    failure = _refused(outcome.failure)
    assert "Requested entity was not found" in failure.message and failure.provider_code == "ModelNotFoundError:404"


def test_real_opencode_not_logged_in(tmp_path: Path, opencode: Path,  # noqa: F811
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """No key at all: "Anthropic API key is missing …", which says nothing a text pattern knew; its name
    (`AI_LoadAPIKeyError` in its error log, `ProviderAuthError` in its event) does. It cost four Attempts."""
    monkeypatch.setattr("test_real_opencode.KEY", "")
    with fake_api("success") as server:
        outcome, _ = run_opencode(tmp_path, opencode, server.url, monkeypatch, idle_ms=60_000)
        asked = len(server.requests)
    assert "API key is missing" in _refused(outcome.failure, "provider_auth_claim").message and asked == 0


@pytest.mark.parametrize(("scenario", "cls", "said"), [("entity_not_found", "provider_config_claim", "404 Not Found"),
                                                       ("401", "provider_auth_claim", "401 Unauthorized")])
def test_real_codex_refusals_by_their_status(tmp_path: Path, codex: Path, scenario: str, cls: str,  # noqa: F811
                                             said: str) -> None:
    """Codex states the API's status in its words ("unexpected status 404 Not Found: …"): a 404 or a 401 says the
    same on every try, whatever the API's message."""
    with fake_api(scenario) as server:
        outcome = codex_adapter(codex).run(codex_request(tmp_path, server.url), sink(tmp_path))
    assert said in _refused(outcome.failure, cls).message


@pytest.mark.parametrize("scenario", ["unknown_model", "no_login"])
def test_real_claude_refusals_cost_exactly_one_attempt_through_awp_run(
        tmp_path: Path, claude: Path, monkeypatch: pytest.MonkeyPatch,  # noqa: F811
        make_git_repo: Callable[[Path], Path], scenario: str) -> None:
    """`awp run` with the real Claude Code against the fake API: an unknown model (the API's 404) or no login
    at all (the account's variable unset) is one Attempt, the fix in its message, and the AgentRun fails."""
    monkeypatch.setenv("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
    if scenario == "no_login":
        monkeypatch.delenv("AWP_REAL_A_KEY", raising=False)
    else:
        monkeypatch.setenv("AWP_REAL_A_KEY", "sk-ant-api03-real-refusal-0123456789abcdef")
    packet = tmp_path / "pkt"
    make_git_repo(packet / "workspace")
    (packet / "packet.yaml").write_text(yaml.safe_dump({
        "name": "realref", "provider": "claude", "model": "claude-nope-9", "timeout": "3m", "accounts": ["a"],
        "recovery": {"retry": {"base_delay_ms": 0, "max_delay_ms": 0, "jitter": False}},
        "repos": {"work": {"path": "./workspace", "default": True}}}))
    (packet / "prompts").mkdir()
    (packet / "prompts" / "01_hello.prompt.md").write_text("---\nid: '01'\nname: Hello\n---\n# Hello\n\nSay hello.\n")
    with fake_api("unknown_model" if scenario == "unknown_model" else "success") as server:
        providers = _providers_file(tmp_path, claude, {"a": ("AWP_REAL_A_KEY", server.url)})
        result = awp("run", packet, "--providers", providers, "--json")
    assert result.exit_code == 1, result.output
    [record] = stored_records(packet, json.loads(result.stdout)["packet_run"])
    failure = record["failure"]
    cls = "provider_config_claim" if scenario == "unknown_model" else "provider_auth_claim"
    assert (failure["failure_class"], failure["retryable"], failure["repairable"]) == (cls, False, False), failure
    assert "not retried" in failure["message"]
