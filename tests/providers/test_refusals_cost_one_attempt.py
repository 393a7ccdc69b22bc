"""A refusal that repeats identically is not retried: Claude Code's "Not logged in" (the fake CLI replays the
real 2.1.197 events) and an API's 400 "model not found" (a local chat-completions server) each cost exactly
one Attempt through `awp run`, the fix in the failure's message; fallback to another target still applies."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml
from provider_helpers import fake_claude_catalog

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))
from e2e_support import awp, stored_records  # noqa: E402

from awp_pipelines.core.records import run_tags as tags  # noqa: E402

NOT_LOGGED_IN = "sk-ant-refusal-scenario-notloggedin-0123456789"
WORKS = "sk-ant-refusal-scenario-success-0123456789"
MODEL_NOT_FOUND = {"error": {"message": "deepseek-v9-free is not a valid model ID", "code": 400}}
NO_DELAYS = {"retry": {"base_delay_ms": 0, "max_delay_ms": 0, "jitter": False}}


def _packet(root: Path, make_git_repo: Callable[[Path], Path], manifest: dict[str, object]) -> Path:
    make_git_repo(root / "workspace")
    (root / "packet.yaml").write_text(yaml.safe_dump({
        "name": "refusal", "timeout": "2m", "recovery": NO_DELAYS,
        "repos": {"work": {"path": "./workspace", "default": True}}, **manifest}))
    (root / "prompts").mkdir()
    (root / "prompts" / "01_greet.prompt.md").write_text(
        "---\n" + yaml.safe_dump({"id": "01", "name": "Greet", "verify": {"files_exist": ["GREETING.md"]}})
        + "---\n# Greet\n\nWrite GREETING.md.\n\nawp-fake-write: GREETING.md = hello\n")
    return root


def _claude_accounts(root: Path, names: list[str]) -> Path:
    providers = root / "providers.yaml"
    providers.write_text(yaml.safe_dump(fake_claude_catalog(
        {name: {"provider": "claude", "credential_env": f"AWP_REFUSAL_{name.upper()}_KEY",
                "config_dir": str(root / "cfg" / name)} for name in names})))
    return providers


def _run(packet: Path, providers: Path) -> tuple[int, list[dict]]:
    result = awp("run", packet, "--providers", providers, "--json")
    return result.exit_code, stored_records(packet, json.loads(result.stdout)["packet_run"])


@pytest.mark.slow
def test_not_logged_in_costs_exactly_one_attempt_with_the_fix(
        tmp_path: Path, make_git_repo: Callable[[Path], Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWP_REFUSAL_BARE_KEY", NOT_LOGGED_IN)
    packet = _packet(tmp_path / "pkt", make_git_repo, {"provider": "claude", "model": "haiku", "accounts": ["bare"]})
    providers = _claude_accounts(tmp_path, ["bare"])
    code, records = _run(packet, providers)
    assert code == 1
    [record] = records
    failure = record["failure"]
    assert (failure["failure_class"], failure["retryable"], failure["repairable"]) == ("provider_auth_claim",
                                                                                      False, False)
    assert "Not logged in" in failure["message"] and "not retried" in failure["message"]
    assert "credential_env" in failure["message"]  # the fix
    # The AgentRun's cause category: in `awp status` (JSON and text) and in the Attempt's asset metadata (UI).
    status = awp("status", packet, "--providers", providers, "--json")
    [prompt] = json.loads(status.stdout)["prompts"]
    assert (prompt["state"], prompt["cause"]) == ("failed", "provider_outage")
    assert "failed (provider_outage)" in awp("status", packet, "--providers", providers).output
    assert _observed(packet, tags.AGENT_RUN_CAUSE) == ["provider_outage"]


def _observed(packet: Path, key: str) -> list[object]:
    """The values of metadata `key` on the observations of prompt 01 (its Attempts that did not complete)."""
    from awp_pipelines.core.packet.packet import load_packet
    from awp_pipelines.core.packet.providers_config import load_catalog
    from awp_pipelines.orchestration.assets import packet_assets
    from awp_pipelines.orchestration.ledger.instance import open_instance

    binding = packet_assets(load_packet(packet), load_catalog(None)).binding
    instance = open_instance(packet)
    try:
        records = instance.fetch_observations(binding.key("01"), limit=10).records
        return [r.asset_observation.metadata[key].value for r in records
                if r.asset_observation and key in r.asset_observation.metadata]
    finally:
        instance.dispose()


@pytest.mark.slow
def test_not_logged_in_still_falls_back_to_the_next_account(
        tmp_path: Path, make_git_repo: Callable[[Path], Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWP_REFUSAL_BARE_KEY", NOT_LOGGED_IN)
    monkeypatch.setenv("AWP_REFUSAL_GOOD_KEY", WORKS)
    packet = _packet(tmp_path / "pkt", make_git_repo, {"provider": "claude", "model": "haiku",
                                                       "accounts": ["bare", "good"]})
    code, records = _run(packet, _claude_accounts(tmp_path, ["bare", "good"]))
    assert code == 0
    assert [(r["identity"]["mode"], r["target"]["account"], r["result"]) for r in records] == [
        ("run", "bare", "provider_failed"), ("fallback", "good", "completed")]


class _ChatCompletions(BaseHTTPRequestHandler):
    """Answers every chat completion 400 "model not found", as OpenRouter does for a model it does not serve."""

    calls: list[str] = []

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("content-length") or 0))
        type(self).calls.append(self.path)
        body = json.dumps(MODEL_NOT_FOUND).encode()
        self.send_response(400)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def _model_not_found_api() -> Iterator[str]:
    _ChatCompletions.calls = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ChatCompletions)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.slow
@pytest.mark.parametrize("accounts", [["router-a"], ["router-a", "router-b"]], ids=["one-account", "two-accounts"])
def test_a_400_model_not_found_costs_exactly_one_attempt(
        tmp_path: Path, make_git_repo: Callable[[Path], Path], monkeypatch: pytest.MonkeyPatch,
        accounts: list[str]) -> None:
    """Another account of the same target is not asked for the model either: it is the provider's answer."""
    monkeypatch.setenv("AWP_REFUSAL_ROUTER_KEY", "sk-or-refusal-0123456789abcdef")
    packet = _packet(tmp_path / "pkt", make_git_repo, {"provider": "router", "model": "deepseek-v9-free",
                                                       "accounts": accounts})
    with _model_not_found_api() as url:
        providers = tmp_path / "providers.yaml"
        providers.write_text(yaml.safe_dump({
            "providers": {"router": {"kind": "openai_http", "base_url": url, "models": ["deepseek"]}},
            "accounts": {name: {"provider": "router", "credential_env": "AWP_REFUSAL_ROUTER_KEY"}
                         for name in accounts}}))
        code, records = _run(packet, providers)
        assert len(_ChatCompletions.calls) == 1
    assert code == 1
    [record] = records
    failure = record["failure"]
    assert (failure["failure_class"], failure["retryable"]) == ("provider_config_claim", False)
    assert "not a valid model" in failure["message"] and "not retried" in failure["message"]
