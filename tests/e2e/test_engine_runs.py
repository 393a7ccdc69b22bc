"""Spend caps, repairs by hand and lifecycles, in process (`awp run`, `awp repair`)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from dagster import AssetKey
from e2e_support import attempt_records, awp, decided_launch, sent_prompt, stored_records

from awp_pipelines.orchestration.ledger.instance import open_instance

STATES = ["created", "provisioning", "running", "checkpointing", "terminal"]


def _packet(root: Path, make_git_repo, manifest: dict, front: dict) -> Path:  # type: ignore[no-untyped-def]
    make_git_repo(root / "workspace")
    (root / "packet.yaml").write_text(yaml.safe_dump({
        "name": root.name, "provider": "simulated", "repos": {"app": {"path": "./workspace", "default": True}},
        **manifest}))
    (root / "prompts").mkdir()
    (root / "prompts" / "01_work.prompt.md").write_text(f"---\n{yaml.safe_dump(front)}---\nWrite done.txt.\n")
    return root


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
    records = stored_records(packet, outcome["attempt"].split(".")[0])
    assert [r["identity"]["mode"] for r in records] == ["run", "repair", "repair"]  # 3 of the 6 the repairs allow
    # The third reached the cap inside its session (its usage event): stopped there, not verified.
    assert [r["result"] for r in records] == ["verification_failed"] * 2 + ["provider_failed"]
    assert records[-1]["failure"]["failure_class"] == "budget_exhausted"
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
    assert "01 budget_exhausted — budget exhausted" in text.output  # nothing more was started
    assert len(stored_records(packet, outcome["attempt"].split(".")[0])) == 3


def _failing_then_fixed(tmp_path: Path, make_git_repo) -> Path:  # type: ignore[no-untyped-def]
    """The run and its one repair write the wrong text; only a third Attempt (by hand) writes it right."""
    steps = [{"writes": [{"path": "done.txt", "text": "half"}]}, {"writes": [{"path": "done.txt", "text": "half"}]},
             {"writes": [{"path": "done.txt", "text": "finished"}]}]
    return _packet(tmp_path / "fixme", make_git_repo, {"recovery": {"repair": {"max_attempts": 1}}},
                   {"verify": {"contains": [{"path": "done.txt", "text": "finished"}]},
                    "simulate": {"attempts": steps}})


def test_awp_repair_on_a_failed_prompt_runs_one_repair_attempt_with_the_unmet_items_and_the_note(
        tmp_path: Path, make_git_repo) -> None:
    packet = _failing_then_fixed(tmp_path, make_git_repo)
    first = awp("run", packet, "--json")
    assert first.exit_code == 1
    [outcome] = json.loads(first.stdout)["prompts"]
    packet_run = outcome["attempt"].split(".")[0]
    assert outcome["state"] == "failed" and len(stored_records(packet, packet_run)) == 2
    secret = "sk-ant-api03-" + "x" * 40
    result = awp("repair", packet, "1", "--note", f"write the word finished {secret}", "--json")
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert (answer["packet_run"], answer["attempt"], answer["mode"], answer["state"]) == \
        (packet_run, f"{packet_run}.01.a3", "repair", "completed")
    records = stored_records(packet, packet_run)
    assert [r["identity"]["mode"] for r in records] == ["run", "repair", "repair"]  # exactly one more
    text = sent_prompt(records[-1])
    assert "## Repair Instructions" in text and "text not found: 'finished'" in text
    assert "write the word finished" in text and secret not in text
    instance = open_instance(packet)
    try:
        [run] = instance.get_runs(limit=1)
        assert decided_launch(run)[:2] == ("01", "repair")
        assert attempt_records(instance, run.run_id)[0].identity.attempt_id == f"{packet_run}.01.a3"
        assert secret not in run.tags["awp/note"] and "write the word" in run.tags["awp/note"]
        assert attempt_records(instance, run.run_id)[0].target.reason.startswith("repair launched by hand")
    finally:
        instance.dispose()


def test_awp_repair_refuses_a_prompt_that_never_ran(tmp_path: Path, make_git_repo) -> None:
    packet = _failing_then_fixed(tmp_path, make_git_repo)
    result = awp("repair", packet, "01")
    assert result.exit_code == 2 and "no Attempt on record" in result.output
