"""A run of a job Dagster made that ended before its first compute (no AWP tag): the recovery sensor serving the
packet whose prompts it selected tags it as its compute would have and launches the prompts it held in its packet run;
a run of no packet's prompts, or one another packet claimed, is left as it is. (The same under a real daemon and
UI launch: tests/daemon/test_daemon_asset_job_runs.py.)"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

from dag_packets import write_dag_packet
from dagster import AssetKey, DagsterInstance, DagsterRun, DagsterRunStatus, build_sensor_context

from awp_pipelines.core.packet.packet import load_packet
from awp_pipelines.core.packet.providers_config import BUILTIN
from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.orchestration.assets import CompiledPacket, packet_assets
from awp_pipelines.orchestration.compute.resources import AwpResource
from awp_pipelines.orchestration.ledger.factory import ledger_of
from awp_pipelines.orchestration.ledger.instance import open_instance_folder
from awp_pipelines.orchestration.sensors.recovery_cursor import RecoveryCursor

ASSET_JOB = "__ASSET_JOB"


def _compiled(tmp_path: Path, name: str) -> CompiledPacket:
    packet = load_packet(write_dag_packet(tmp_path / name, {"01": "r1", "02": "r1"}, depends_on={"02": ["01"]},
                                       name=name))
    return packet_assets(packet, BUILTIN, AwpResource(state_dir=str(tmp_path / "state" / name)))


def _ended(instance: DagsterInstance, selection: list[AssetKey] | None, run_tags: dict[str, str] | None = None
           ) -> str:
    run_id = str(uuid.uuid4())
    instance.add_run(DagsterRun(job_name=ASSET_JOB, run_id=run_id, status=DagsterRunStatus.FAILURE,
                                asset_selection=frozenset(selection) if selection is not None else None,
                                tags=run_tags or {}))
    return run_id


def test_an_untagged_asset_job_run_joins_the_packet_it_selected_and_its_prompts_are_launched(tmp_path: Path) -> None:
    mine, other = _compiled(tmp_path, "mine"), _compiled(tmp_path, "other")
    instance = open_instance_folder(tmp_path / "instance")
    try:
        start = time.time() - 1
        held = _ended(instance, list(mine.binding.keys))
        foreign = _ended(instance, list(other.binding.keys))
        unselected = _ended(instance, None)
        result = mine.sensor.evaluate_tick(build_sensor_context(
            instance=instance, cursor=RecoveryCursor(after=start).dump(), definitions=mine.definitions()))
        runs = {run_id: instance.get_run_by_id(run_id) for run_id in (held, foreign, unselected)}
    finally:
        instance.dispose()
    claimed = runs[held]
    assert claimed is not None
    packet_run = f"pr-{held[:8]}"
    assert {k: v for k, v in claimed.tags.items() if k.startswith(tags.PREFIX)} == {
        tags.PACKET_RUN: packet_run}
    assert [(r.tags[tags.PACKET_RUN], r.asset_selection) for r in result.run_requests or []] == [
        (packet_run, [mine.binding.key("01")])]
    for run_id in (foreign, unselected):
        assert not any(k.startswith(tags.PREFIX) for k in runs[run_id].tags)  # type: ignore[union-attr]


def test_a_run_claimed_by_another_packet_or_with_a_bad_packet_run_tag_is_left_as_stored(tmp_path: Path) -> None:
    """A tick's read of the ended runs may predate another sensor's claim (another code location on the
    instance): the run as stored wins, so the second claim sees it tagged and leaves it."""
    mine, other = _compiled(tmp_path, "mine"), _compiled(tmp_path, "other")
    instance = open_instance_folder(tmp_path / "instance")
    try:
        both = _ended(instance, [*mine.binding.keys, *other.binding.keys])
        ledger = ledger_of(instance)
        first, second = ledger.claim_run(both, "other"), ledger.claim_run(both, "mine")  # each reads it afresh
        bad = _ended(instance, list(mine.binding.keys), {tags.PACKET_RUN: "../.."})
        refused = ledger.claim_run(bad, "mine")
        listed = {p: ledger_of(instance).packet_runs(p) for p in ("mine", "other")}
    finally:
        instance.dispose()
    assert first is not None and second is not None and refused is not None
    assert first.tags[tags.PACKET_RUN] == second.tags[tags.PACKET_RUN] == f"pr-{both[:8]}"
    assert listed == {"mine": [], "other": [f"pr-{both[:8]}"]}  # the first sensor that looked claimed it
    assert refused.tags == {tags.PACKET_RUN: "../.."}
