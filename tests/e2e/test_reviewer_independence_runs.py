"""Reviewer independence through `awp run`: the coder ran on sim-a, so the reviewer (whose first account is
sim-a) runs on sim-b; with only sim-a it is refused as a policy denial, shown by `awp plan` and `awp status`."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from e2e_support import awp, stored_records


def _packet(root: Path, make_git_repo: Callable[[Path], Path], reviewer_accounts: list[str]) -> tuple[Path, Path]:
    make_git_repo(root / "workspace")
    (root / "packet.yaml").write_text(yaml.safe_dump({
        "name": "independent", "provider": "simulated", "model": "simulated-demo",
        "repos": {"work": {"path": "./workspace", "default": True}}}))
    (root / "prompts").mkdir()
    for stem, agent, accounts, path in (("01_code", "coder", ["sim-a"], "CODE.md"),
                                        ("02_review", "strict-reviewer", reviewer_accounts, "REVIEW.md")):
        front = {"id": stem[:2], "name": stem[3:], "agent": agent, "accounts": accounts,
                 "verify": {"files_exist": [path]}, "simulate": {"attempts": [{"writes": [{"path": path,
                                                                                            "text": "ok"}]}]}}
        (root / "prompts" / f"{stem}.prompt.md").write_text(f"---\n{yaml.safe_dump(front)}---\n# {stem}\n")
    providers = root / "providers.yaml"
    providers.write_text(yaml.safe_dump({
        "accounts": {"sim-a": {"provider": "simulated"}, "sim-b": {"provider": "simulated"}},
        "agents": {"strict-reviewer": {"role": "reviewer", "capability": "reviews the coder's change",
                                       "providers": ["simulated"]}}}))
    return root, providers


@pytest.mark.slow
def test_the_reviewer_runs_on_another_account_than_its_coder(
        tmp_path: Path, make_git_repo: Callable[[Path], Path]) -> None:
    packet, providers = _packet(tmp_path / "pkt", make_git_repo, ["sim-a", "sim-b"])
    plan = json.loads(awp("plan", packet, "--providers", providers, "--json").stdout)
    assert [(p["agent"], p["role"], p["independent_of"]) for p in plan["prompts"]] == [
        ("coder", "coder", []), ("strict-reviewer", "reviewer", ["01"])]
    result = awp("run", packet, "--providers", providers, "--json")
    assert result.exit_code == 0, result.output
    packet_run = json.loads(result.stdout)["packet_run"]
    [coder] = stored_records(packet, packet_run, "01")
    [reviewer] = stored_records(packet, packet_run, "02")
    assert (coder["target"]["account"], reviewer["target"]["account"]) == ("sim-a", "sim-b")
    status = json.loads(awp("status", packet, "--providers", providers, "--json").stdout)
    assert [(p["role"], p["avoids"]) for p in status["prompts"]] == [("coder", []),
                                                                     ("reviewer", ["simulated/sim-a"])]


@pytest.mark.slow
def test_a_reviewer_left_only_its_coders_account_is_a_policy_denial(
        tmp_path: Path, make_git_repo: Callable[[Path], Path]) -> None:
    packet, providers = _packet(tmp_path / "pkt", make_git_repo, ["sim-a"])
    result = awp("run", packet, "--providers", providers, "--json")
    assert result.exit_code == 1, result.output
    packet_run = json.loads(result.stdout)["packet_run"]
    assert stored_records(packet, packet_run, "02") == []  # no Attempt on the coder's account
    status = json.loads(awp("status", packet, "--providers", providers, "--json").stdout)
    review = status["prompts"][1]
    assert (review["state"], review["cause"]) == ("failed", "policy_denial")
    assert "independence" in review["reason"] and "simulated/sim-a" in review["reason"]
    assert "failed (policy_denial)" in awp("status", packet, "--providers", providers).output
