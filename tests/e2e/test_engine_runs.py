"""Spend caps, repairs by hand and lifecycles, in process (`awp run`, `awp repair`)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from dagster import AssetKey
from e2e_support import awp

from awp_pipelines.orchestration.instance import open_instance
from awp_pipelines.orchestration.state import agent_run_records
from awp_pipelines.packet import load_packet

STATES = ["created", "provisioning", "running", "checkpointing", "terminal"]


def _packet(root: Path, make_git_repo, manifest: dict, front: dict) -> Path:  # type: ignore[no-untyped-def]
    make_git_repo(root / "workspace")
    (root / "packet.yaml").write_text(yaml.safe_dump({
        "name": root.name, "provider": "simulated", "repos": {"app": {"path": "./workspace", "default": True}},
        **manifest}))
    (root / "prompts").mkdir()
    (root / "prompts" / "01_work.prompt.md").write_text(f"---\n{yaml.safe_dump(front)}---\nWrite done.txt.\n")
    return root


def _records(packet: Path, packet_run: str) -> list[dict]:
    instance = open_instance(packet)
    try:
        return [r.model_dump(mode="json") for r in agent_run_records(instance, load_packet(packet), packet_run, "01")]
    finally:
        instance.dispose()


def test_a_packet_capped_at_5_cents_stops_after_the_third_2_cent_attempt(tmp_path: Path, make_git_repo) -> None:
    step = {"messages": ["not yet"], "cost_usd": 0.02}
    packet = _packet(tmp_path / "capped", make_git_repo,
                     {"budget": {"max_cost_usd": 0.05}, "recovery": {"repair": {"max_attempts": 5}}},
                     {"verify": {"files_exist": ["done.txt"]}, "simulate": {"attempts": [step] * 6}})
    plan = awp("plan", packet)
    assert "budget of the packet run: $0.05" in plan.output
    result = awp("run", packet, "--json")
    assert result.exit_code == 1
    [outcome] = json.loads(result.stdout)["prompts"]
    assert outcome["state"] == "budget_exhausted"
    assert outcome["decision"] == "budget exhausted: the packet run spent $0.0600 of its $0.05 cap"
    records = _records(packet, outcome["attempt"].split(".")[0])
    assert [r["identity"]["mode"] for r in records] == ["run", "repair", "repair"]  # 3 of the 6 the repairs allow
    assert [r["usage"]["cost_usd"] for r in records] == [0.02] * 3
    assert [r["packet_run_spend"]["cost_usd"] for r in records] == [0.02, 0.04, 0.06]
    assert [t["state"] for t in records[-1]["transitions"]] == STATES
    instance = open_instance(packet)
    try:
        meta = instance.fetch_observations(AssetKey(["capped", "01_work"]), limit=1).records[0]
        metadata = meta.asset_observation.metadata
        assert metadata["awp/packet_run_spend"].value.startswith("$0.0600, ")
        assert metadata["awp/lifecycle"].value.startswith("created → provisioning → running")
    finally:
        instance.dispose()
    text = awp("run", packet, "--packet-run", outcome["attempt"].split(".")[0])
    assert "agent run budget_exhausted" in text.output  # the final per-prompt line; nothing more was started
    assert len(_records(packet, outcome["attempt"].split(".")[0])) == 3
