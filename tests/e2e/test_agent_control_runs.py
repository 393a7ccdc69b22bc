"""Agent control in process: the simulated agent steers its iterations through its session's handle."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml
from e2e_support import attempt_records, awp, decided_launch, git_log, runs_of_packet, sent_prompt, stored_records

from awp_pipelines.orchestration.ledger.instance import open_instance

CONTROL = {"enabled": True, "completion_verify": {"files_exist": ["final.txt"]}, "max_iterations": 5}


def controlled_packet(root: Path, make_git_repo, steps: list[dict]) -> Path:  # type: ignore[no-untyped-def]
    make_git_repo(root / "workspace")
    (root / "packet.yaml").write_text(yaml.safe_dump({
        "name": "steered", "provider": "simulated", "agent_control": CONTROL,
        "repos": {"app": {"path": "./workspace", "default": True}}}))
    (root / "prompts").mkdir()
    front = {"verify": {"files_exist": ["step.txt"]}, "simulate": {"attempts": steps}}
    (root / "prompts" / "01_work.prompt.md").write_text(f"---\n{yaml.safe_dump(front)}---\nWork.\n")
    return root


def _step(n: int, **control: object) -> dict:
    return {"writes": [{"path": "step.txt", "text": str(n)}], "control": control}


def _run(packet: Path) -> tuple[dict, list[dict]]:
    result = awp("run", packet, "--json")
    [outcome] = json.loads(result.stdout)["prompts"]
    return outcome, stored_records(packet, outcome["attempt"].split(".")[0])


def test_repeat_twice_then_finish_gives_three_iterate_attempts_and_completes(tmp_path: Path, make_git_repo) -> None:
    final = {"writes": [{"path": "final.txt", "text": "3"}], "control": {"action": "finish", "reason": "all done"}}
    packet = controlled_packet(tmp_path / "p", make_git_repo,
                               [_step(1, action="repeat", reason="more to do", progress="1/3"),
                                _step(2, action="repeat"), final])
    outcome, records = _run(packet)
    assert (outcome["result"], outcome["state"]) == ("completed", "completed")
    assert [r["identity"]["mode"] for r in records] == ["iterate"] * 3
    assert [(r["control"]["iteration"], r["control"]["outcome"]) for r in records] == \
        [(1, "repeat"), (2, "repeat"), (3, "finish")]
    assert records[0]["control"]["progress"] == "1/3" and records[0]["control"]["reason"] == "more to do"
    assert records[1]["target"]["reason"] == "iteration 2/5: the agent asked to repeat: more to do"
    assert "## Agent Control" in sent_prompt(records[0]) and "iteration 1 of at most 5" in sent_prompt(records[0])
    assert len(git_log(packet / "workspace")) == 4  # every iteration's work committed before its directive
    for record in records:  # the iteration's token never reaches the record or the event log
        ident = record["identity"]
        folder = packet / ".awp" / "control" / ident["packet_run"] / "01" / ident["attempt_id"]
        token = json.loads((folder / "request.json").read_text())["token"]
        assert len(token) >= 32 and token not in json.dumps(record)
        assert token not in Path(record["events_file"]).read_text()


def test_a_finish_before_the_completion_contract_passes_is_rejected_and_the_loop_goes_on(
        tmp_path: Path, make_git_repo) -> None:
    final = {"writes": [{"path": "final.txt", "text": "x"}], "control": {"action": "finish", "reason": "now"}}
    packet = controlled_packet(tmp_path / "p", make_git_repo, [_step(1, action="finish", reason="early"), final])
    outcome, records = _run(packet)
    assert outcome["state"] == "completed"
    assert [r["control"]["outcome"] for r in records] == ["finish_rejected", "finish"]
    assert "final.txt" in records[0]["control"]["unmet"]
    assert "was rejected" in sent_prompt(records[1]) and "final.txt" in sent_prompt(records[1])
    assert records[1]["target"]["reason"].endswith("finish rejected: the completion contract is unmet")


@pytest.mark.parametrize(("forge", "why"), [("token", "wrong token"), ("iteration", "wrong iteration"),
                                            ("prompt", "wrong prompt")])
def test_a_forged_request_is_rejected_and_recorded(tmp_path: Path, make_git_repo, forge: str, why: str) -> None:
    packet = controlled_packet(tmp_path / "p", make_git_repo,
                               [_step(1, action="finish", reason="trust me", forge=forge)] * 2)
    (packet / "workspace" / "final.txt").write_text("the completion contract would pass")
    # Committed: an Attempt refuses a tree holding a person's uncommitted changes.
    for args in (["add", "final.txt"], ["commit", "-qm", "final"]):
        subprocess.run(["git", "-C", str(packet / "workspace"), *args], check=True)
    outcome, records = _run(packet)
    [record] = records
    assert (record["control"]["outcome"], record["control"]["source"]) == ("invalid_request", "request")
    assert record["control"]["reason"].startswith(why)
    assert outcome["state"] == "failed" and outcome["decision"].startswith("invalid agent-control request: " + why)


def test_blocked_ends_the_agent_run_blocked_with_the_agents_reason(tmp_path: Path, make_git_repo) -> None:
    packet = controlled_packet(tmp_path / "p", make_git_repo,
                               [_step(1, action="blocked", reason="needs a database password from a person")])
    outcome, records = _run(packet)
    assert outcome["state"] == "blocked"
    assert outcome["decision"] == "the agent is blocked: needs a database password from a person"
    [record] = records
    assert record["control"]["reason"] == "needs a database password from a person"
    assert record["transitions"][-1]["cause"] == "human_wait"
    text = awp("run", packet, "--packet-run", outcome["attempt"].split(".")[0])
    # A resume starts nothing: it says the AgentRun is blocked, and what to run instead.
    assert text.exit_code == 1 and "01 blocked — the agent is blocked: needs a database password" in text.output
    assert "awp repair" in text.output


def test_the_next_prompt_starts_only_once_the_agent_stops_iterating(tmp_path: Path, make_git_repo) -> None:
    """01 passes its contract in iteration 1 but asks to repeat: 02 must not start in that run."""
    from dagster import AssetKey

    packet = controlled_packet(tmp_path / "p", make_git_repo, [_step(1, action="repeat"), _step(2, action="continue")])
    second = {"verify": {"files_exist": ["two.txt"]},
              "simulate": {"attempts": [{"writes": [{"path": "two.txt", "text": "2"}]}]}}
    (packet / "prompts" / "02_next.prompt.md").write_text(f"---\n{yaml.safe_dump(second)}---\nNext.\n")
    result = awp("run", packet, "--json")
    assert result.exit_code == 0, result.output
    instance = open_instance(packet)
    try:
        runs = list(reversed(runs_of_packet(instance, "steered")))
        assert [decided_launch(r)[:2] for r in runs[1:]] == [("01", "iterate"), ("02", "iterate")]
        assert attempt_records(instance, runs[2].run_id)[0].target.reason == "upstream 01 completed"
        first = instance.fetch_materializations(AssetKey(["steered", "01_work"]), limit=10).records
        assert len(first) == 2  # each iteration's committed work is materialized
    finally:
        instance.dispose()
