"""Agent control reaches a real agent process: a `command` agent (a shell script) steers its iterations with
`awp agent-control` from its own shell, with an `awp` it finds on its PATH only because the Attempt put it there."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import yaml
from e2e_support import awp, git_log, stored_records

STEERING_AGENT = Path(__file__).resolve().parents[1] / "fixtures" / "agents" / "steering.sh"
CONTROL = {"enabled": True, "completion_verify": {"files_exist": ["final.txt"]}, "max_iterations": 4}
PROVIDERS = {"providers": {"agent": {"kind": "command", "command": str(STEERING_AGENT), "models": ["m"]}}}


def steering_packet(root: Path, make_git_repo) -> Path:  # type: ignore[no-untyped-def]
    """A one-prompt agent-controlled packet whose `command` agent is tests/fixtures/agents/steering.sh."""
    make_git_repo(root / "workspace")
    (root / "packet.yaml").write_text(yaml.safe_dump({
        "name": "shelled", "provider": "agent", "model": "m", "timeout": "2m", "agent_control": CONTROL,
        "repos": {"app": {"path": "./workspace", "default": True}}}))
    (root / "prompts").mkdir()
    front = {"verify": {"files_exist": ["step.txt"]}}
    (root / "prompts" / "01_work.prompt.md").write_text(f"---\n{yaml.safe_dump(front)}---\nWork.\n")
    return root


def test_a_command_agent_repeats_then_finishes_through_awp_agent_control(
        tmp_path: Path, make_git_repo, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    # A PATH with no `awp` on it: the agent can reach `awp` only through the Attempt's shim.
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert shutil.which("awp") is None
    packet = steering_packet(tmp_path / "p", make_git_repo)
    providers = tmp_path / "providers.yaml"
    providers.write_text(yaml.safe_dump(PROVIDERS))
    result = awp("run", packet, "--providers", providers, "--json")
    # The agent's HOME was its own scoped folder under the state folder, not the operator's.
    home = packet / ".awp" / "homes" / "agent-login"
    log = (home / "control.log").read_text()
    assert result.exit_code == 0, result.output + log
    assert Path(os.environ["HOME"]) != home and "is not set" not in log, log
    [outcome] = json.loads(result.stdout)["prompts"]
    records = stored_records(packet, outcome["attempt"].split(".")[0])
    assert [r["identity"]["mode"] for r in records] == ["iterate", "iterate"]
    assert [(r["control"]["iteration"], r["control"]["outcome"], r["control"]["source"]) for r in records] == \
        [(1, "repeat", "request"), (2, "finish", "request")], log
    assert records[0]["control"]["progress"] == "first pass done"
    assert records[1]["control"]["reason"] == "all done"  # the finish stood: completion_verify passed
    assert (outcome["result"], outcome["state"]) == ("completed", "completed")
    assert len(git_log(packet / "workspace")) == 3  # the initial commit and one per iteration
