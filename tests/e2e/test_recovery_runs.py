"""Retry, fallback and repair in process (`awp run`): each decision is a new Attempt in a new Dagster run. One
packet runs every recovery mode of Prompt Runner's walkthrough; each decision on its own (fallbacks, repairs and
their budget, lineage, a dependent after its upstream's repair, a stored cooldown) runs under the real compute and
sensor on a `MemoryLedger`: tests/ledger/test_scenarios_on_memory.py."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from e2e_support import (
    awp,
    git_log,
    sent_prompt,
    stored_records,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
# Attempts per prompt of Prompt Runner's recovery walkthrough, and the mode of each.
RECOVERY_MATRIX = {
    "01": ["run", "retry"], "02": ["run", "repair"], "03": ["run"], "04": ["run", "retry"],
    "05": ["run", "retry", "retry"], "06": ["run"], "07": ["run", "retry", "repair"], "08": ["run", "retry"],
    "09": ["run"],
}


def test_simulated_recovery_packet_completes_every_prompt_with_prompt_runners_recovery(compat_packet) -> None:
    packet = compat_packet("simulated_recovery_packet")
    result = awp("run", packet, "--json")
    assert result.exit_code == 0, result.output
    outcomes = json.loads(result.stdout)["prompts"]
    assert [o["result"] for o in outcomes] == ["completed"] * 9
    packet_run = outcomes[0]["attempt"].split(".")[0]
    for prompt, modes in RECOVERY_MATRIX.items():
        records = stored_records(packet, packet_run, prompt)
        assert [r["identity"]["mode"] for r in records] == modes, prompt
        assert records[-1]["result"] == "completed"
    # 03 and 09 recovered inside their one Attempt by resuming the provider session.
    assert stored_records(packet, packet_run, "03")[0]["resumes"] == 1
    # 06: the provider reported an error, the verifier passed: complete, with the error kept as provenance.
    [override] = stored_records(packet, packet_run, "06")
    assert override["provider_failure"]["failure_class"] == "provider_runtime_claim"
    # 07's repair prompt carried the unmet item and the last runtime error.
    repair = stored_records(packet, packet_run, "07")[-1]
    assert "## Repair Instructions" in sent_prompt(repair)
    assert "draft.meta.txt" in sent_prompt(repair) and "provider_runtime_claim" in sent_prompt(repair)
    assert len(git_log(packet / "workspace")) == 10


@pytest.mark.slow
def test_the_demo_packet_completes_all_three_prompts(tmp_path: Path) -> None:
    demo = tmp_path / "demo"
    shutil.copytree(REPO_ROOT / "assets" / "demo", demo, ignore=shutil.ignore_patterns("workspace", ".awp"))
    subprocess.run(["bash", str(demo / "setup.sh")], check=True, capture_output=True)
    result = awp("run", demo, "--json")
    assert result.exit_code == 0, result.output
    attempts = [o["attempt"].rsplit(".", 1)[1] for o in json.loads(result.stdout)["prompts"]]
    assert attempts == ["a1", "a2", "a2"]
