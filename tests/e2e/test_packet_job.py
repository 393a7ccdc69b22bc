"""The packet job as the UI or a schedule launches it: every prompt in one run, no awp/ tags given."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from dagster import AssetCheckKey, AssetKey, DagsterEventType, DagsterInstance
from e2e_support import attempt_records, decided_launch

from awp_pipelines.core.packet.packet import load_packet
from awp_pipelines.core.packet.providers_config import BUILTIN
from awp_pipelines.orchestration.assets import packet_assets
from awp_pipelines.orchestration.compile.translator import repo_pools
from awp_pipelines.orchestration.compute.resources import AwpResource

REPO_ROOT = Path(__file__).resolve().parents[2]
GREETING, CHANGELOG, STATUS = (AssetKey(["demo", n]) for n in ("01_write_greeting", "02_write_changelog",
                                                                "03_write_status_report"))


def test_prompts_sharing_a_repo_share_a_pool_and_disjoint_repos_do_not(compat_root: Path, tmp_path: Path) -> None:
    multi = load_packet(compat_root / "multi_repo_packet")
    assert len(set(repo_pools(multi).values())) == 1  # 01 touches alpha and beta, 02 alpha: one work tree set
    root = tmp_path / "split"
    (root / "prompts").mkdir(parents=True)
    (root / "packet.yaml").write_text("name: split\nrepos:\n  a: {path: a}\n  b: {path: b}\n  c: {path: c}\n")
    for number, targets in ((1, "[a]"), (2, "[b]"), (3, "[c, b]")):
        (root / "prompts" / f"0{number}_p.prompt.md").write_text(f"---\ntargets: {targets}\n---\nbody\n")
    pools = repo_pools(load_packet(root))
    assert pools["01"] != pools["02"] and pools["02"] == pools["03"]


def test_the_packet_job_runs_every_prompt_in_one_run_and_stores_checks(tmp_path: Path) -> None:
    demo = tmp_path / "demo"
    shutil.copytree(REPO_ROOT / "assets" / "demo", demo, ignore=shutil.ignore_patterns("workspace", ".awp"))
    subprocess.run(["bash", str(demo / "setup.sh")], check=True, capture_output=True)
    packet = load_packet(demo)
    defs = packet_assets(packet, BUILTIN, AwpResource()).definitions()
    with DagsterInstance.ephemeral() as instance:
        result = defs.resolve_job_def("packet__demo").execute_in_process(instance=instance, raise_on_error=False)
        assert not result.success  # 02 misses an item (blocking check), 03 is rate limited: sensors recover later
        checks = instance.event_log_storage
        passed = checks.get_latest_asset_check_execution_by_key([
            AssetCheckKey(GREETING, "greeting_md_contains_hello_from_awp_pipelines"),
            AssetCheckKey(CHANGELOG, "changelog_md_contains_unreleased")])
        assert passed[AssetCheckKey(GREETING, "greeting_md_contains_hello_from_awp_pipelines")].evaluation.passed
        assert not passed[AssetCheckKey(CHANGELOG, "changelog_md_contains_unreleased")].evaluation.passed
        meta = instance.get_latest_materialization_event(GREETING).asset_materialization.metadata
        # Without awp/ tags the Dagster run names the packet run, and the run is tagged with it.
        assert meta["awp/record"].value["identity"]["packet_run"] == f"pr-{result.run_id[:8]}"
        assert instance.get_run_by_id(result.run_id).tags["awp/packet_run"] == f"pr-{result.run_id[:8]}"
        # The record is stored once: on the materialization, not again on the step's output.
        assert isinstance(meta["awp/record"].value, dict)
        outputs = instance.all_logs(result.run_id, of_type=DagsterEventType.STEP_OUTPUT)
        assert outputs and not [e for e in outputs if "awp/record" in e.dagster_event.event_specific_data.metadata]
        # An Attempt that did not complete produced no work product: observed, never materialized.
        assert instance.get_latest_materialization_event(CHANGELOG) is None
        assert instance.get_latest_materialization_event(STATUS) is None
        run_tags = instance.get_run_by_id(result.run_id).tags
        # A run of several prompts names its packet run, never one prompt's Attempt.
        assert run_tags["awp/packet_run"] == f"pr-{result.run_id[:8]}"
        assert "awp/attempt" not in run_tags and "awp/prompt" not in run_tags
        observed = instance.fetch_observations(STATUS, limit=5).records
        assert any(r.asset_observation.metadata.get("awp/result") and
                   r.asset_observation.metadata["awp/result"].value == "provider_failed" for r in observed)


def test_the_recovery_sensor_requests_each_next_attempt_once_with_its_identity(tmp_path: Path) -> None:
    from dagster import build_sensor_context

    demo = tmp_path / "demo"
    shutil.copytree(REPO_ROOT / "assets" / "demo", demo, ignore=shutil.ignore_patterns("workspace", ".awp"))
    subprocess.run(["bash", str(demo / "setup.sh")], check=True, capture_output=True)
    compiled = packet_assets(load_packet(demo), BUILTIN, AwpResource())
    defs = compiled.definitions()
    with DagsterInstance.ephemeral() as instance:
        first = defs.resolve_job_def("packet__demo").execute_in_process(instance=instance, raise_on_error=False)
        tick = compiled.sensor.evaluate_tick(build_sensor_context(instance=instance, definitions=defs))
        requests = {decided_launch(r)[0]: r for r in tick.run_requests}
        assert {p: decided_launch(r)[1] for p, r in requests.items()} == {"02": "repair", "03": "retry"}
        packet_run = f"pr-{first.run_id[:8]}"
        assert {r.run_key for r in tick.run_requests} == {f"{packet_run}.02.a2", f"{packet_run}.03.a2"}
        assert requests["02"].asset_selection == [CHANGELOG]
        assert requests["02"].tags["dagster/parent_run_id"] == first.run_id
        # One prompt, one step: run in the run worker's process (a Celery prefork child may not fork steps).
        assert requests["02"].run_config["execution"] == {"config": {"in_process": {}}}
        # The cursor moved past the run: the next tick asks for nothing new.
        again = compiled.sensor.evaluate_tick(build_sensor_context(instance=instance, definitions=defs,
                                                                   cursor=tick.cursor))
        assert again.run_requests == []
        # The decided launch travels whole as the run's config; the compute follows it, deciding nothing again.
        decided = requests["02"].run_config["ops"][CHANGELOG.to_python_identifier()]["config"]
        assert (decided["number"], decided["mode"], decided["parent_run"]) == (2, "repair", first.run_id)
        repair = defs.resolve_job_def("packet__demo").execute_in_process(
            instance=instance, raise_on_error=False, asset_selection=[CHANGELOG], tags=requests["02"].tags,
            run_config=requests["02"].run_config)
        [record] = attempt_records(instance, repair.run_id)
        assert (record.identity.attempt_id, record.target.reason) == (f"{packet_run}.02.a2", decided["reason"])
