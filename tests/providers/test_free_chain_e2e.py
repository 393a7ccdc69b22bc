"""The seed's free chain end to end, with the repository's own resources/providers.yaml and the fake OpenCode
CLI (tests/providers/fakes/opencode, on PATH as `opencode`): `awp run` on `factory-free-useful` runs the
Attempt on `factory-free-fallback`'s model when the first model is not offered (its probe), moves down the
chain on a rate limit, and starts no agent at all when neither model is offered."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import responses
import yaml
from provider_helpers import FAKES

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))
from e2e_support import awp, stored_records  # noqa: E402

from awp_pipelines.core.planning.model_lists import MODEL_LISTS, OPENCODE_LISTS  # noqa: E402

SHIPPED = Path(__file__).resolve().parents[2] / "resources" / "providers.yaml"
DEEPSEEK = "opencode/deepseek-v4-flash-free"
NORTH = "openrouter/cohere/north-mini-code:free"


def _packet(root: Path, make_git_repo: Callable[[Path], Path], body: str) -> Path:
    make_git_repo(root / "workspace")
    (root / "packet.yaml").write_text(yaml.safe_dump({
        "name": "free", "model": "factory-free-useful", "timeout": "2m",
        "recovery": {"retry": {"base_delay_ms": 0, "max_delay_ms": 0, "jitter": False}},
        "repos": {"work": {"path": "./workspace", "default": True}}}))
    (root / "prompts").mkdir()
    (root / "prompts" / "01_greet.prompt.md").write_text(
        "---\n" + yaml.safe_dump({"id": "01", "name": "Greet", "verify": {"files_exist": ["GREETING.md"]}})
        + f"---\n# Greet\n\nWrite GREETING.md.\n\nawp-fake-write: GREETING.md = hello\n{body}")
    return root


@pytest.fixture
def fake_opencode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`opencode` on PATH is the fake; the models lists are asked afresh by every probe."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "opencode").symlink_to(FAKES / "opencode")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(MODEL_LISTS, "ttl_s", 0.0)


def _run(packet: Path, offered: dict[str, list[str]]) -> tuple[int, list[dict]]:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mocked:
        for prefix, url in OPENCODE_LISTS.items():
            mocked.get(url, json={"data": [{"id": i} for i in offered.get(prefix, [])]})
        mocked.add_passthru("http://127.0.0.1")
        result = awp("run", packet, "--providers", SHIPPED, "--json")
    return result.exit_code, stored_records(packet, json.loads(result.stdout)["packet_run"])


@pytest.mark.slow
@pytest.mark.usefixtures("fake_opencode")
def test_a_probe_failure_runs_the_attempt_on_the_fallback_aliases_model(
        tmp_path: Path, make_git_repo: Callable[[Path], Path]) -> None:
    packet = _packet(tmp_path / "pkt", make_git_repo, "")
    code, records = _run(packet, {"opencode": ["some-paid-model"], "openrouter": ["cohere/north-mini-code:free"]})
    assert code == 0
    [record] = records
    assert (record["target"]["provider"], record["target"]["model"], record["result"]) == (
        "opencode-zen", NORTH, "completed")
    assert f"probe of opencode-zen/{DEEPSEEK}: unavailable" in record["target"]["reason"]


@pytest.mark.slow
@pytest.mark.usefixtures("fake_opencode")
def test_a_rate_limit_moves_down_the_chain_to_the_next_model(tmp_path: Path,
                                                             make_git_repo: Callable[[Path], Path]) -> None:
    packet = _packet(tmp_path / "pkt", make_git_repo, "awp-fake-scenario-on: deepseek = ratelimit\n")
    code, records = _run(packet, {"opencode": ["deepseek-v4-flash-free"],
                                  "openrouter": ["cohere/north-mini-code:free"]})
    assert code == 0
    assert [(r["identity"]["mode"], r["target"]["model"], r["result"]) for r in records] == [
        ("run", DEEPSEEK, "provider_failed"), ("fallback", NORTH, "completed")]
    assert records[0]["failure"]["failure_class"] == "provider_rate_limit"
    assert f"falling back to opencode-zen/{NORTH}" in records[1]["target"]["reason"]


@pytest.mark.slow
@pytest.mark.usefixtures("fake_opencode")
def test_no_model_offered_starts_no_agent_and_ends_no_target_available(
        tmp_path: Path, make_git_repo: Callable[[Path], Path]) -> None:
    packet = _packet(tmp_path / "pkt", make_git_repo, "awp-fake-env-dump: agent-ran.json\n")
    code, records = _run(packet, {})
    assert code == 1
    [record] = records  # one Attempt, refused before its agent: not retried, not started on a missing model
    failure = record["failure"]
    assert failure["provider_code"] == "no_target_available" and failure["retryable"] is False
    assert f"opencode-zen/{DEEPSEEK} → opencode-zen/{NORTH}" in failure["message"]
    assert not (packet / "workspace" / "agent-ran.json").exists()
    status = json.loads(awp("status", packet, "--providers", SHIPPED, "--json").stdout)
    [prompt] = status["prompts"]
    assert prompt["state"] == "failed" and "no_target_available" in prompt["reason"]
