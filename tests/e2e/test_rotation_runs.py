"""Rotation as configured, end to end: the accounts each Attempt used, as its stored record and its run's
tags say, follow the alias's rotation over the accounts' usage and cooldowns stored in the instance."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from dagster import DagsterInstance, RunsFilter, build_sensor_context
from e2e_support import attempt_records, awp, decided_launch

from awp_pipelines.core.packet.packet import load_packet
from awp_pipelines.core.packet.providers_config import load_catalog
from awp_pipelines.orchestration.assets import packet_assets
from awp_pipelines.orchestration.compute.resources import AwpResource
from awp_pipelines.orchestration.ledger.factory import ledger_of
from awp_pipelines.orchestration.ledger.instance import open_instance
from awp_pipelines.orchestration.views.standing import agent_run_records

ACCOUNTS = ["sim-a", "sim-b", "sim-c"]
LIMITED = {"error": {"kind": "provider_rate_limit", "message": "You've hit your limit"}}


def _providers(root: Path, rotation: str) -> Path:
    providers = root / "providers.yaml"
    providers.write_text(yaml.safe_dump({
        "accounts": {a: {"provider": "simulated", "cooldown_s": 3600} for a in ACCOUNTS},
        "aliases": {"rot": {"rotation": rotation, "targets": [{"provider": "simulated", "accounts": ACCOUNTS}]}}}))
    return providers


def _write(file: Path, prompt: str, front: dict) -> None:
    file.write_text(f"---\n{yaml.safe_dump({'id': prompt, **front})}---\n# Prompt {prompt}\n")


def _packet(root: Path, make_git_repo: Callable[[Path], Path], prompts: dict[str, dict]) -> Path:
    make_git_repo(root / "workspace")
    (root / "packet.yaml").write_text(yaml.safe_dump({
        "name": "rot", "model": "rot", "repos": {"app": {"path": "./workspace", "default": True}},
        "recovery": {"retry": {"base_delay_ms": 0, "max_delay_ms": 0, "jitter": False}}}))
    (root / "prompts").mkdir()
    for number, (prompt, front) in enumerate(prompts.items(), 1):
        _write(root / "prompts" / f"0{number}_p{prompt}.prompt.md", prompt, front)
    return root


def _done(name: str) -> dict:
    return {"writes": [{"path": name, "text": "ok"}]}


# 01 misses its contract twice (two repairs), 02 is rate limited once, 03 completes at once; 02 follows 01
# and 03 follows 02, so the Attempts run in this order: 01.a1, 01.a2, 01.a3, 02.a1, 02.a2, 03.a1.
LINEAR = {
    "01": {"verify": {"files_exist": ["one.txt"]}, "simulate": {"attempts": [{}, {}, _done("one.txt")]}},
    "02": {"verify": {"files_exist": ["two.txt"]}, "simulate": {"attempts": [LIMITED, _done("two.txt")]}},
    "03": {"verify": {"files_exist": ["three.txt"]}, "simulate": {"attempts": [_done("three.txt")]}},
}
# sim-b has five Attempts on record from before (long ago): least_used avoids it, round_robin does not.
EXPECTED = {
    # Every Attempt of an AgentRun moves on; the limited sim-a rests, so 03 starts on the next one.
    "between_attempts": {"01": ["sim-a", "sim-b", "sim-c"], "02": ["sim-a", "sim-b"], "03": ["sim-b"]},
    # New AgentRuns take the account used longest ago; a fallback too, among those not tried yet.
    "round_robin": {"01": ["sim-a", "sim-a", "sim-a"], "02": ["sim-c", "sim-b"], "03": ["sim-a"]},
    # The fewest Attempts on record: sim-b's five keep it out of use.
    "least_used": {"01": ["sim-a", "sim-a", "sim-a"], "02": ["sim-c", "sim-a"], "03": ["sim-a"]},
    # The first account until it rests, then the next.
    "fill_first": {"01": ["sim-a", "sim-a", "sim-a"], "02": ["sim-a", "sim-b"], "03": ["sim-b"]},
}


@pytest.mark.parametrize("rotation", list(EXPECTED))
def test_awp_run_uses_the_accounts_each_rotation_gives(rotation: str, tmp_path: Path,
                                                        make_git_repo: Callable[[Path], Path]) -> None:
    root = _packet(tmp_path / "pkt", make_git_repo, LINEAR)
    providers = _providers(tmp_path, rotation)
    instance = open_instance(root)
    try:
        for _ in range(5):
            ledger_of(instance).record_use("sim-b", 1)
    finally:
        instance.dispose()
    result = awp("run", root, "--providers", providers, "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert [p["result"] for p in report["prompts"]] == ["completed"] * 3
    packet_run = report["packet_run"]
    instance = open_instance(root)
    try:
        packet = load_packet(root)
        records = {p: agent_run_records(ledger_of(instance), packet, packet_run, p) for p in EXPECTED[rotation]}
        used = {p: [r.target.account for r in rs] for p, rs in records.items()}
        assert used == EXPECTED[rotation]
        # Each Attempt launched on its own (all but 01's first, which ran with the whole selection) carries
        # its account on its run's tags too: the run queue runs one run per account.
        tagged = {attempt_records(instance, r.run_id)[0].identity.attempt_id: r.tags["awp/account"] for r in
                  instance.get_runs(filters=RunsFilter(tags={"awp/packet_run": packet_run})) if "awp/account" in r.tags}
        assert tagged == {r.identity.attempt_id: r.target.account for rs in records.values() for r in rs
                          if r.identity.attempt_id != f"{packet_run}.01.a1"}
        uses = ledger_of(instance).availability(ACCOUNTS, 0).usage
        assert sum(u.attempts for u in uses.values()) == 6 + 5  # every Attempt counted, and sim-b's five before
    finally:
        instance.dispose()
    if rotation in ("round_robin", "least_used"):
        assert rotation in records["02"][0].target.reason
    if rotation == "between_attempts":
        assert "between_attempts: sim-b follows sim-a" in records["01"][1].target.reason


def test_the_sensor_and_a_ui_launch_pick_the_account_the_rotation_gives(tmp_path: Path,
                                                                        make_git_repo: Callable[[Path], Path]) -> None:
    """Three independent prompts in one run, as the UI launches the job: each compute picks its account
    by round_robin over the stored usage (sim-a, sim-b, sim-c). 01 is rate limited; the recovery sensor's
    fallback for it, and the compute of a UI launch of 01 without awp tags, both pick sim-b: the account
    not tried yet by the AgentRun and not resting that was used longest ago."""
    independent = {
        "01": {"depends_on": [], "verify": {"files_exist": ["one.txt"]},
               "simulate": {"attempts": [LIMITED, _done("one.txt")]}},
        "02": {"depends_on": [], "verify": {"files_exist": ["two.txt"]}, "simulate": {"attempts": [_done("two.txt")]}},
        "03": {"depends_on": [], "verify": {"files_exist": ["three.txt"]},
               "simulate": {"attempts": [_done("three.txt")]}},
    }
    root = _packet(tmp_path / "pkt", make_git_repo, independent)
    packet = load_packet(root)
    compiled = packet_assets(packet, load_catalog(_providers(tmp_path, "round_robin")), AwpResource())
    defs = compiled.definitions()
    job = defs.resolve_job_def("packet__rot")
    with DagsterInstance.ephemeral() as instance:
        first = job.execute_in_process(instance=instance, raise_on_error=False)
        packet_run = f"pr-{first.run_id[:8]}"
        used = {p: [r.target.account for r in agent_run_records(ledger_of(instance), packet, packet_run, p)]
                for p in ("01", "02", "03")}
        assert used == {"01": ["sim-a"], "02": ["sim-b"], "03": ["sim-c"]}
        tick = compiled.sensor.evaluate_tick(build_sensor_context(instance=instance, definitions=defs))
        [request] = tick.run_requests
        assert decided_launch(request)[:2] == ("01", "fallback")
        assert request.tags["awp/account"] == "sim-b"
        # The same Attempt launched from the UI, with no awp/ tags: the compute decides it, the same way.
        again = job.execute_in_process(instance=instance, asset_selection=[compiled.binding.key("01")],
                                       tags={"awp/packet_run": packet_run}, raise_on_error=False)
        assert again.success
        [_, fallback] = agent_run_records(ledger_of(instance), packet, packet_run, "01")
        assert (fallback.identity.mode, fallback.target.account) == ("fallback", "sim-b")
        assert fallback.identity.attempt_id == request.run_key
