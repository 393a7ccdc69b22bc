"""Intent is part of the AgentRun's identity (issue 24 item 3): a prompt edited between two runs of a packet run
starts a new AgentRun on the resume (mode `run`, its own budget), the resume says which prompt changed and how,
and the old AgentRun reads `cancelled (superseded)` in `awp status`, `awp watch` and the asset's metadata. The
prompts that did not change go on as they were."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from e2e_support import awp, stored_events, stored_records
from test_agent_run_truth import _packet, _prompt, _sensor_launches, _writes

from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.dagster_compat.events import plain_value
from awp_pipelines.orchestration.ledger.factory import ledger_of
from awp_pipelines.orchestration.ledger.instance import open_instance
from awp_pipelines.orchestration.views.attempt_pages import FoundAttempt, agent_run_attempts

FAILS = {"error": {"kind": "provider_runtime_claim"}}


def _page_attempts(packet: Path, agent_run: str) -> list[FoundAttempt]:
    """The Attempts the AgentRun's page (`awp serve`, /agent-runs/<id>) lists."""
    folder = packet / ".awp" / "dagster"
    instance = open_instance(folder, folder)
    try:
        return agent_run_attempts(ledger_of(instance), agent_run)
    finally:
        instance.dispose()


def test_an_edited_prompt_starts_a_new_agent_run_and_the_old_one_reads_superseded_everywhere(
        tmp_path: Path, make_git_repo) -> None:
    packet = _packet(tmp_path / "p", make_git_repo, {"01_a": _prompt("a.txt"),
                                                     "02_b": _prompt("b.txt", FAILS, _writes("b.txt"))})
    first = awp("run", packet, "--no-recovery", "--json")
    assert first.exit_code == 1
    packet_run = json.loads(first.stdout)["packet_run"]
    # The user rewrites 02: its body and its contract (and the script of its simulated agent).
    edited = {"verify": {"files_exist": ["c.txt"]}, "simulate": {"attempts": [_writes("c.txt")] * 3}}
    (packet / "prompts" / "02_b.prompt.md").write_text(f"---\n{yaml.safe_dump(edited)}---\nWork on c.\n")

    # The recovery sensor decides the same: 02's next launch is the first Attempt of a new AgentRun, said so.
    assert _sensor_launches(packet) == [("02", "run")]

    resumed = awp("run", packet, "--packet-run", packet_run, "--json")
    assert resumed.exit_code == 0, resumed.output
    summary = json.loads(resumed.stdout)
    assert summary["warnings"] == ["prompt 02 changed since its last Attempt (body, contract, settings): a new "
                                   "AgentRun starts for it; the old one ends cancelled (superseded)"]
    assert "warning: prompt 02 changed" in resumed.stderr
    # 02's new AgentRun began with a first Attempt (mode run), not a retry of the old one; 01 did not run again.
    modes = [(r["identity"]["number"], r["identity"]["mode"], r["result"]) for r in stored_records(packet, packet_run,
                                                                                                   "02")]
    assert modes[0][:2] == (1, "run") and modes[0][2] != "completed" and modes[1:] == [(2, "run", "completed")]
    assert len(stored_records(packet, packet_run, "01")) == 1

    status = json.loads(awp("status", packet, "--packet-run", packet_run, "--json").stdout)
    prompts = {p["prompt"]: p for p in status["prompts"]}
    assert status["state"] == "completed" and prompts["02"]["state"] == "completed"
    assert prompts["02"]["superseded"].startswith("cancelled — superseded: the prompt's body, contract, settings "
                                                  "changed after attempt 1")
    assert prompts["01"]["superseded"] is None
    # Two AgentRuns, two ids, in every view: the records, status, watch, the commit's trailers, the page.
    old, new = f"{packet_run}.02", f"{packet_run}.02.r2"
    assert [r["identity"]["agent_run"] for r in stored_records(packet, packet_run, "02")] == [old, new]
    assert (prompts["02"]["agent_run"], prompts["02"]["superseded_agent_run"]) == (new, old)
    assert [a["attempt"] for a in prompts["02"]["attempts"]] == [f"{old}.a1", f"{new}.a2"]
    text = awp("status", packet, "--packet-run", packet_run).stdout
    assert f"earlier AgentRun {old}: cancelled (superseded)" in text and f"AgentRun {new}: completed" in text
    watch = json.loads(awp("watch", packet, "--packet-run", packet_run, "--once", "--json").stdout.splitlines()[0])
    assert watch["superseded"] == {"02": "cancelled (superseded)"}
    assert watch["agent_run_ids"]["02"] == new and watch["superseded_agent_runs"] == {"02": old}
    blamed = json.loads(awp("blame", packet / "workspace" / "c.txt:1", "--json").stdout)
    assert (blamed["lines"][0]["awp"]["agent_run"], blamed["lines"][0]["awp"]["attempt"]) == (new, f"{new}.a2")
    assert [a.attempt_id for a in _page_attempts(packet, old)] == [f"{old}.a1"]
    assert [a.attempt_id for a in _page_attempts(packet, new)] == [f"{new}.a2"]
    # The asset page: the old AgentRun's end, in the metadata key every Attempt's state is in.
    said = [plain_value(e.dagster_event.event_specific_data.asset_observation.metadata[tags.AGENT_RUN_STATE])
            for e in stored_events(packet) if e.dagster_event is not None and e.dagster_event.is_asset_observation
            and tags.AGENT_RUN_STATE in e.dagster_event.event_specific_data.asset_observation.metadata]
    assert [s for s in said if "superseded" in str(s)] == [prompts["02"]["superseded"]]

    again = awp("run", packet, "--packet-run", packet_run, "--json")  # nothing changed since: no warning
    assert "warnings" not in json.loads(again.stdout)
