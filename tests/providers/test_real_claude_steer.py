"""`awp control steer` reaches the real Claude Code CLI mid-Attempt: `awp run` (a process of its own, the embedded
Dagster instance) runs the real CLI against the local fake Messages API, whose one Bash call sleeps; the steer
ends the session and resumes it (`--resume <session>`) with the message, and the next request carries it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import yaml
from click.testing import CliRunner
from fake_apis import fake_api
from provider_helpers import real_cli

from awp_pipelines.cli import cli
from awp_pipelines.core.decisions.operator_control import running_sessions

STEER = "check the README before you go on"
KEY = "sk-ant-api03-steer-test-key-0123456789abcdef"


def test_awp_control_steer_reaches_the_real_claude_code_mid_attempt(tmp_path: Path, make_git_repo) -> None:  # type: ignore[no-untyped-def]
    claude = real_cli("claude")
    packet = tmp_path / "p"
    make_git_repo(packet / "workspace")
    (packet / "packet.yaml").write_text(yaml.safe_dump({
        "name": "steered", "provider": "agent", "model": "claude-haiku-4-5", "permission_mode": "bypass",
        "timeout": "3m", "accounts": ["a"], "repos": {"app": {"path": "./workspace", "default": True}}}))
    (packet / "prompts").mkdir()
    front = {"verify": {"files_exist": ["done.txt"]}}
    (packet / "prompts" / "01_work.prompt.md").write_text(f"---\n{yaml.safe_dump(front)}---\nWrite done.txt.\n")
    with fake_api("bash") as api:
        api.command = "sleep 6 && echo done > done.txt"  # the agent's one tool call, until its result is back
        providers = tmp_path / "providers.yaml"
        providers.write_text(yaml.safe_dump({
            "providers": {"agent": {"kind": "claude_code", "command": str(claude), "models": ["claude"],
                                    "credential_env": "ANTHROPIC_API_KEY", "config_dir_env": "CLAUDE_CONFIG_DIR",
                                    "isolation": "none", "env": {"IS_SANDBOX": "1"}}},
            "accounts": {"a": {"provider": "agent", "credential_env": "AWP_TEST_AGENT_KEY", "base_url": api.url,
                               "config_dir": str(tmp_path / "accounts" / "a")}}}))
        env = {**os.environ, "AWP_TEST_AGENT_KEY": KEY, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
               "DISABLE_AUTOUPDATER": "1"}
        awp_bin = Path(sys.executable).parent / "awp"
        runner = subprocess.Popen([str(awp_bin), "run", str(packet), "--providers", str(providers), "--json"],
                                  env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 120
            # Steer once the model asked for its Bash call and the tool sleeps.
            while not (running_sessions(packet / ".awp") and any(b.get("tools") for b in api.bodies)):
                assert runner.poll() is None and time.monotonic() < deadline, runner.communicate()
                time.sleep(0.1)
            time.sleep(1.5)
            asked = len(api.bodies)
            steered = CliRunner().invoke(cli, ["control", "steer", str(packet), STEER, "--author", "ada"])
            assert steered.exit_code == 0, steered.output
            out, err = runner.communicate(timeout=150)
        finally:
            if runner.poll() is None:
                runner.kill()
    assert runner.returncode == 0, out + err
    later = [json.dumps(b) for b in api.bodies[asked:] if b.get("tools")]
    assert later and STEER in later[0]  # the next request to the model carries the steer
    assert all(STEER not in json.dumps(b) for b in api.bodies[:asked])
    [outcome] = json.loads(out)["prompts"]
    assert outcome["result"] == "completed"
    events = [json.loads(line) for f in (packet / ".awp").rglob("*.jsonl") if "events" in f.parts
              for line in f.read_text().splitlines()]
    resumed = [e for e in events if e["type"] == "resume_started"]
    assert resumed and resumed[0]["prompt"] == STEER and resumed[0]["session_id"]
    assert [e["author"] for e in events if e["type"] == "steer_received"] == ["ada"]
    assert KEY not in "".join(json.dumps(e) for e in events)
