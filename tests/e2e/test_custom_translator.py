"""A custom translator is authoritative everywhere, not only in the builder: its asset keys and its work-tree
pool hold for the run, `awp status`, `--remaining` and the leases (they used to read `prompt_key` and
`repo_pools` directly, so a custom key showed nothing done and a custom pool was not the one leased)."""

from __future__ import annotations

import json
from pathlib import Path

from dag_packets import write_dag_packet
from dagster import AssetKey
from e2e_support import awp
from translators import TEAM_POOL, TeamTranslator

from awp_pipelines import api
from awp_pipelines.core.packet.packet import load_packet
from awp_pipelines.core.packet.providers_config import BUILTIN
from awp_pipelines.orchestration.compile.binding import PacketBinding
from awp_pipelines.orchestration.driver.parallel import can_overlap
from awp_pipelines.orchestration.ledger.instance import open_instance

DOTTED = "translators.TeamTranslator"


def test_a_custom_key_and_pool_hold_for_status_remaining_and_the_leases(tmp_path: Path) -> None:
    # 01 edits repo a, 02 repo b (disjoint: by default they would run at once), 03 repo a; a chain.
    root = write_dag_packet(tmp_path / "dag", {"01": "a", "02": "b", "03": "a"}, depends_on={"01": [], "02": [],
                                                                                          "03": []})
    packet = load_packet(root)
    team = PacketBinding.of(packet, BUILTIN, translator=TeamTranslator())
    assert team.key("01") == AssetKey(["team", "dag", "01_p01"]) and set(team.pools.values()) == {TEAM_POOL}
    # One pool: the two prompts on disjoint repos never overlap (the default pools would let them).
    assert can_overlap(PacketBinding.of(packet, BUILTIN), ["01", "02"])
    assert not can_overlap(team, ["01", "02"])

    result = api.run(root, ["01", "02"], translator=DOTTED, parallel=4)
    assert result.ok, result

    instance = open_instance(root)
    try:
        assert instance.get_latest_materialization_event(team.key("02")) is not None
        # The work-tree lease claimed the translator's pool, not the repo pool of `repo_pools`.
        pools = set(instance.event_log_storage.get_concurrency_keys())
        assert f"{TEAM_POOL}_tree" in pools and not any(p.startswith("awp_dag_") for p in pools), pools
    finally:
        instance.dispose()

    report = api.status(root, translator=DOTTED)
    assert {p.prompt: (p.state, len(p.attempts)) for p in report.prompts} == {
        "01": ("completed", 1), "02": ("completed", 1), "03": ("not_selected", 0)}
    shown = awp("status", root, "--translator", DOTTED, "--json")
    assert shown.exit_code == 0, shown.output
    assert [p["state"] for p in json.loads(shown.stdout)["prompts"]] == ["completed", "completed", "not_selected"]

    remaining = api.plan(root, api.Select(remaining=True), translator=DOTTED)
    assert [p.id for p in remaining.prompts] == ["03"]
    rest = api.run(root, api.Select(remaining=True), translator=DOTTED)
    assert rest.packet_run == result.packet_run and [o.prompt for o in rest.outcomes] == ["03"] and rest.ok


def test_the_step_processes_of_a_parallel_run_build_the_job_with_the_same_translator(tmp_path: Path) -> None:
    """Prompts on disjoint repos run in spawned step processes, each building the packet's job again: with the
    run's translator (by its dotted path), or their steps would not be the run's."""
    root = write_dag_packet(tmp_path / "dag", {"01": "a", "02": "b"}, depends_on={"01": [], "02": []})
    result = api.run(root, translator="translators.TeamKeys", parallel=2)
    assert result.ok and [o.result for o in result.outcomes] == ["completed", "completed"]
    assert [p.state for p in api.status(root, translator="translators.TeamKeys").prompts] == ["completed"] * 2
