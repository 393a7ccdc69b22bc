"""Agent control reaches a real agent process: a `command` agent (a shell script) steers its iterations with
`awp agent-control` from its own shell, with an `awp` it finds on its PATH only because the Attempt put it there."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest
import yaml
from e2e_support import awp, git_log, stored_records

# Iteration 1 reports progress and asks to repeat; iteration 2 writes final.txt and asks to finish. Each step
# notes what it saw, so a refusal ("... is not set") is on record too.
AGENT = """#!/bin/sh
prompt=$(cat)
echo "iteration ${AWP_PROMPT_ITERATION:-unset}" > step.txt
echo "$HOME" > "$NOTES/home.txt"
case "$prompt" in
  *"iteration 1 of"*)
    awp agent-control progress --summary "first pass done" >> "$NOTES/log.txt" 2>&1
    awp agent-control repeat --reason "one more pass" >> "$NOTES/log.txt" 2>&1 ;;
  *)
    echo done > final.txt
    awp agent-control finish --reason "all done" >> "$NOTES/log.txt" 2>&1 ;;
esac
echo "agent ran"
"""


def _packet(root: Path, make_git_repo, notes: Path) -> tuple[Path, Path]:  # type: ignore[no-untyped-def]
    make_git_repo(root / "workspace")
    script = root / "agent.sh"
    script.write_text(AGENT.replace("$NOTES", str(notes)))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    (root / "packet.yaml").write_text(yaml.safe_dump({
        "name": "steered", "provider": "agent", "model": "m", "timeout": "2m",
        "agent_control": {"enabled": True, "completion_verify": {"files_exist": ["final.txt"]},
                          "max_iterations": 4},
        "repos": {"app": {"path": "./workspace", "default": True}}}))
    (root / "prompts").mkdir()
    front = {"verify": {"files_exist": ["step.txt"]}}
    (root / "prompts" / "01_work.prompt.md").write_text(f"---\n{yaml.safe_dump(front)}---\nWork.\n")
    providers = root / "providers.yaml"
    providers.write_text(yaml.safe_dump({"providers": {"agent": {"kind": "command", "command": str(script),
                                                                 "models": ["m"]}}}))
    return root, providers


def test_a_command_agent_repeats_then_finishes_through_awp_agent_control(
        tmp_path: Path, make_git_repo, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    # A PATH with no `awp` on it: the agent can reach `awp` only through the Attempt's shim.
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert shutil.which("awp") is None
    notes = tmp_path / "notes"
    notes.mkdir()
    packet, providers = _packet(tmp_path / "p", make_git_repo, notes)
    result = awp("run", packet, "--providers", providers, "--json")
    log = (notes / "log.txt").read_text() if (notes / "log.txt").exists() else ""
    assert result.exit_code == 0, result.output + log
    [outcome] = json.loads(result.stdout)["prompts"]
    records = stored_records(packet, outcome["attempt"].split(".")[0])
    assert "is not set" not in log, log
    assert [r["identity"]["mode"] for r in records] == ["iterate", "iterate"]
    assert [(r["control"]["iteration"], r["control"]["outcome"], r["control"]["source"]) for r in records] == \
        [(1, "repeat", "request"), (2, "finish", "request")], log
    assert records[0]["control"]["progress"] == "first pass done"
    assert records[1]["control"]["reason"] == "all done"  # the finish stood: completion_verify passed
    assert (outcome["result"], outcome["state"]) == ("completed", "completed")
    assert len(git_log(packet / "workspace")) == 3  # the initial commit and one per iteration
    # The agent's HOME was its own scoped folder, not the operator's.
    home = (notes / "home.txt").read_text().strip()
    assert home != os.environ.get("HOME") and Path(home).is_relative_to(packet / ".awp" / "homes")
