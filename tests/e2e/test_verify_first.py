"""`awp run --verify-first` (Prompt Runner's pre-flight verify): a prompt whose contract already passes completes
with no agent session; one whose contract is unmet runs as usual."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from e2e_support import awp, sent_prompt, stored_records


def _packet(root: Path, make_git_repo: Callable[[Path], Path]) -> Path:
    """01's contract (README.md exists) is met before it runs; 02's (NOTES.md) is not. Each prompt's agent writes
    NOTES.md, and a session that starts stores the prompt it was sent."""
    make_git_repo(root / "workspace")
    (root / "packet.yaml").write_text(yaml.safe_dump({
        "name": "verifyfirst", "provider": "simulated", "model": "simulated-demo",
        "repos": {"work": {"path": "./workspace", "default": True}}}))
    (root / "prompts").mkdir()
    for n, (name, path) in enumerate((("Readme", "README.md"), ("Notes", "NOTES.md")), start=1):
        front = {"id": f"0{n}", "name": name, "verify": {"files_exist": [path]},
                 "simulate": {"attempts": [{"writes": [{"path": "NOTES.md", "text": "notes"}]}]}}
        (root / "prompts" / f"0{n}_{name.lower()}.prompt.md").write_text(f"---\n{yaml.safe_dump(front)}---\n# {name}\n")
    return root


def _run(packet: Path, *args: str) -> str:
    """`awp run PACKET ARGS --json`, which must succeed: its packet run."""
    result = awp("run", packet, *args, "--json")
    assert result.exit_code == 0, result.output
    return str(json.loads(result.stdout)["packet_run"])


@pytest.mark.slow
def test_verify_first_completes_a_met_contract_without_a_session_and_runs_the_rest(
        tmp_path: Path, make_git_repo: Callable[[Path], Path]) -> None:
    packet = _packet(tmp_path / "pkt", make_git_repo)
    packet_run = _run(packet, "--verify-first")
    [met] = stored_records(packet, packet_run, "01")
    assert (met["result"], met["session_id"], sent_prompt(met), met["commits"]) == ("completed", None, "", [])
    assert "verify first" in met["transitions"][-1]["reason"]
    [ran] = stored_records(packet, packet_run, "02")
    assert ran["result"] == "completed" and sent_prompt(ran)  # its agent was asked


@pytest.mark.slow
def test_without_verify_first_a_met_contract_still_runs_its_agent(
        tmp_path: Path, make_git_repo: Callable[[Path], Path]) -> None:
    packet = _packet(tmp_path / "pkt", make_git_repo)
    [record] = stored_records(packet, _run(packet, "01"), "01")
    assert sent_prompt(record)
