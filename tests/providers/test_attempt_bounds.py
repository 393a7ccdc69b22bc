"""Every bound comes from `timeout`, and the runner enforces what `awp plan` prints: the Attempt's deadline holds
across its session and every resume (a resume gets what is left, never a fresh timeout), and the idle bound is
the plan's, so an agent quiet through a long build is not killed before the deadline."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from provider_helpers import fake_claude_catalog

from awp_pipelines.cli import cli
from awp_pipelines.core.engine.attempt_record import AttemptIdentity, AttemptTarget
from awp_pipelines.core.engine.attempts import AttemptSpec, execute_attempt
from awp_pipelines.core.packet.bounds import derive_bounds
from awp_pipelines.core.packet.packet import load_packet
from awp_pipelines.core.packet.providers_config import load_catalog
from awp_pipelines.core.planning.plan import PlanContext, build_plan
from awp_pipelines.core.providers.process import run_streaming
from awp_pipelines.core.providers.registry import adapter_for
from awp_pipelines.core.records.events import EventSink

DROPPING_KEY = "sk-ant-bounds-test-scenario-drop-0123456789"


def _packet(root: Path, make_git_repo: Any, manifest: dict[str, Any]) -> tuple[Path, Path]:
    make_git_repo(root / "workspace")
    (root / "packet.yaml").write_text(yaml.safe_dump({
        "name": "bounded", "provider": "claude", "model": "haiku", "accounts": ["claude-a"],
        "repos": {"app": {"path": "./workspace", "default": True}}, **manifest}))
    (root / "prompts").mkdir()
    front = {"verify": {"files_exist": ["done.txt"]}}
    (root / "prompts" / "01_work.prompt.md").write_text(f"---\n{yaml.safe_dump(front)}---\nWork.\n")
    providers = root / "providers.yaml"
    providers.write_text(yaml.safe_dump(fake_claude_catalog(
        {"claude-a": {"provider": "claude", "credential_env": "AWP_BOUNDS_KEY", "config_dir": str(root / "cfg")}})))
    return root, providers


def _events(path: Path, kind: str) -> list[dict[str, Any]]:
    return [e for e in map(json.loads, path.read_text().splitlines()) if e["type"] == kind]


def test_timeout_5s_with_a_session_that_resumes_twice_ends_at_the_attempts_deadline(
        tmp_path: Path, make_git_repo: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWP_BOUNDS_KEY", DROPPING_KEY)
    root, providers = _packet(tmp_path / "p", make_git_repo, {"timeout": "5s", "recovery": {"resume_attempts": 3}})
    catalog = load_catalog(providers)
    packet = load_packet(root)
    [plan] = build_plan(packet, PlanContext(catalog=catalog)).prompts
    identity = AttemptIdentity(attempt_id="pr-1.01.a1", agent_run="pr-1.01", number=1, packet="bounded",
                               packet_run="pr-1", prompt="01", mode="run")
    target = AttemptTarget(provider="claude", provider_kind="claude_code", model="haiku", account="claude-a",
                           reason="primary")
    spec = AttemptSpec(packet=packet, prompt=packet.prompt("01"), plan=plan, identity=identity, target=target,
                       secret_env=catalog.account_secrets("claude-a"), agent_root=root / ".awp")
    events = tmp_path / "events.jsonl"
    record = execute_attempt(spec, adapter_for(catalog.providers["claude"], "claude"),
                             EventSink(events, identity.attempt_id, secrets=(DROPPING_KEY,)))
    # Each session drops after 2 s; every resume gets only what is left of the one 5 s deadline, and none starts
    # once it passed. How many fit depends on how fast the machine starts a session (two on a quiet one), so
    # the test holds the rule, not the count: a fresh 5 s per resume (the bug) fails every line below.
    assert 1 <= record.resumes <= 2
    assert record.failure is not None and record.failure.failure_class == "transport_timeout"
    assert record.failure.provider_code == "deadline" and "the Attempt's deadline (5s" in record.failure.message
    deadlines = [e["deadline_ms"] for e in _events(events, "run_started")]
    assert len(deadlines) == record.resumes + 1 and deadlines[0] == 5000
    assert all(a > b > 0 for a, b in zip(deadlines, deadlines[1:], strict=False))  # only what was left
    ended = [e["elapsed_ms"] for e in _events(events, "run_failed") if "elapsed_ms" in e]
    assert len(ended) == len(deadlines)
    # What a resume was given is what the sessions before it had left (to the scheduling of one session start).
    for k in range(1, len(deadlines)):
        assert deadlines[k] <= 5000 - sum(ended[:k]) + 50  # ms rounding
    assert [e["idle_ms"] for e in _events(events, "run_started")] == [plan.bounds.idle_timeout_ms] * len(deadlines)


def test_the_idle_bound_the_session_enforces_is_the_one_awp_plan_prints(
        tmp_path: Path, make_git_repo: Any) -> None:
    root, providers = _packet(tmp_path / "p", make_git_repo, {})  # no timeout: the seven-day default
    shown = CliRunner().invoke(cli, ["plan", str(root), "--providers", str(providers), "--json"])
    assert shown.exit_code == 0, shown.output
    printed = json.loads(shown.stdout)["prompts"][0]["bounds"]
    text = CliRunner().invoke(cli, ["plan", str(root), "--providers", str(providers)]).output
    assert "idle 7d30s" in " ".join(text.split()) and "deadline 7d" in text
    bounds = derive_bounds(None)
    assert (printed["idle_timeout_ms"], printed["run_deadline_ms"]) == (bounds.idle_timeout_ms, bounds.run_deadline_ms)
    # Far beyond the old 20-minute idle cap: silence alone never ends a session before its deadline.
    assert bounds.idle_timeout_ms > bounds.run_deadline_ms > 20 * 60_000


def test_an_agent_silent_for_25_minutes_under_the_default_timeout_is_not_killed(tmp_path: Path) -> None:
    """A fake clock that moves 10 minutes per reading: the agent's second and a half of silence reads as more
    than 25 minutes."""
    now = [0.0]

    def clock() -> float:
        now[0] += 600.0
        return now[0]

    bounds = derive_bounds(None)
    lines: list[str] = []
    script = "import time; time.sleep(1.5); print('built', flush=True)"
    result = run_streaming([sys.executable, "-c", script], cwd=tmp_path, env={}, on_line=lines.append,
                           deadline_ms=bounds.run_deadline_ms, idle_ms=bounds.idle_timeout_ms, clock=clock)
    assert result.ended == "exited" and lines == ["built"]
    assert now[0] >= 25 * 60  # the silence lasted longer than the old 20-minute cap, by the clock
    killed = run_streaming([sys.executable, "-c", script], cwd=tmp_path, env={}, on_line=lines.append,
                           deadline_ms=bounds.run_deadline_ms, idle_ms=20 * 60_000, clock=clock)
    assert killed.ended == "idle"  # the old cap, on the same clock, would have killed it
