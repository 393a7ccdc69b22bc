"""`awp status` and the asset page after a demo run: what a person reads in the morning.

The demo's 02 misses a verifier item (then a repair completes it), 03 is rate limited (then a retry completes).
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import jsonschema
import pytest
import sqlalchemy as sa
from dagster import AssetKey, DagsterEventType, RunsFilter
from e2e_support import awp, postgres_instance_dir, runs_of_packet

from awp_pipelines.cli_features.schema import schema_for
from awp_pipelines.orchestration.ledger.instance import open_instance

REPO_ROOT = Path(__file__).resolve().parents[2]


def _shipped_schema(name: str) -> dict:
    """The schema file that ships with the package (`make schemas` writes it from the models)."""
    return json.loads(resources.files("awp_pipelines").joinpath(f"schemas/{name}.schema.json").read_text("utf-8"))
CHANGELOG = AssetKey(["demo", "02_write_changelog"])


def _status_json(*args: str | Path) -> dict:
    result = awp("status", *args, "--json")
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)  # the instance line goes to stderr
    jsonschema.validate(payload, _shipped_schema("status"))
    return payload


def _assert_demo_status(status: dict, instance_runs: set[str]) -> None:
    assert status["packet"] == "demo" and status["state"] == "completed"
    prompts = {p["prompt"]: p for p in status["prompts"]}
    assert [p["state"] for p in status["prompts"]] == ["completed"] * 3
    changelog = prompts["02"]["attempts"]
    assert [(a["number"], a["mode"], a["result"]) for a in changelog] == [
        (1, "run", "verification_failed"), (2, "repair", "completed")]
    assert changelog[1]["reason"].startswith("repair 1/2")
    assert changelog[1]["commits"] and changelog[1]["commits"][0].startswith("docs@")
    rate_limited = prompts["03"]["attempts"][0]
    assert (rate_limited["result"], rate_limited["failure_class"]) == ("provider_failed", "provider_rate_limit")
    assert prompts["02"]["verifier"]["passed"] is True  # the last report: the repair's
    # Each Attempt names its page (`awp serve`), by its id.
    assert all(a["page"].endswith(f"/attempts/{a['attempt']}") for p in status["prompts"] for a in p["attempts"])
    assert {a["dagster_run"] for p in status["prompts"] for a in p["attempts"]} <= instance_runs
    totals = status["totals"]
    assert (totals["prompts"], totals["completed"], totals["attempts"], totals["runs"]) == (3, 3, 5, 3)
    assert totals["tokens_in"] == sum(a["tokens_in"] for p in status["prompts"] for a in p["attempts"]) > 0


def test_status_json_on_sqlite_validates_and_tells_the_demo_story(demo_copy: Path) -> None:
    demo = demo_copy
    assert _status_json(demo)["state"] == "not_started"  # nothing ran yet
    result = awp("run", demo)
    assert result.exit_code == 0, result.output
    instance = open_instance(demo)
    try:
        runs = {r.run_id for r in runs_of_packet(instance, "demo")}
        _check_asset_page(instance)
        _assert_read_paths_agree(instance, demo)
    finally:
        instance.dispose()
    status = _status_json(demo)
    _assert_demo_status(status, runs)
    # The same packet run by id, and the human output names every Attempt's mode and result.
    assert _status_json(demo, "--packet-run", status["packet_run"]) == status
    text = awp("status", demo).output
    assert "#2 repair on simulated/simulated-demo: completed" in text
    assert "provider_failed (provider_rate_limit)" in text
    assert "5 Attempts in 3 Dagster runs" in text and " · Dagster run " in text  # a run is not the mode `run`
    assert awp("status", demo, "--packet-run", "pr-none").exit_code == 2


@pytest.mark.postgres
def test_status_json_on_postgres_validates(tmp_path: Path, demo_copy: Path, fresh_pg_database: sa.URL) -> None:
    demo = demo_copy
    home = postgres_instance_dir(tmp_path / "pg-home", fresh_pg_database)
    result = awp("run", demo, "--instance", home)
    assert result.exit_code == 0, result.output
    instance = open_instance(demo, home)
    try:
        runs = {r.run_id for r in instance.get_runs()}
        _assert_read_paths_agree(instance, demo)
    finally:
        instance.dispose()
    _assert_demo_status(_status_json(demo, "--instance", home), runs)


def test_the_shipped_status_schema_is_the_models_schema() -> None:
    assert _shipped_schema("status") == schema_for("status")
    result = awp("schema", "status")
    assert json.loads(result.output) == schema_for("status")


def _check_asset_page(instance) -> None:  # type: ignore[no-untyped-def]
    """What the asset page of 02 shows: the Attempt history, a visibly failed first Attempt, no noise."""
    materialized = instance.get_latest_materialization_event(CHANGELOG).asset_materialization.metadata
    history = materialized["awp/attempts"].value
    # Four narrow columns (#, mode, result, run); target, duration, cost and reason are on the Attempt's page,
    # which each number links to (`awp serve`).
    assert ".02.a1) | run | **✗\u00a0verification failed** | [" in history
    assert ".02.a2) | repair | ✓\u00a0completed | [" in history  # four columns: target and cost are on the page
    assert list(materialized)[0] == "awp/page" and materialized["awp/page"].value.endswith(".02.a2")
    assert materialized["awp/reason"].value == "repair 1/2: unmet verifier items"
    assert "](/runs/" in history  # each run links to its page
    # The events file is named once, on the start marker (and in the transcript's last line), not again here.
    assert "awp/events" not in materialized and ".awp/events/" in materialized["awp/transcript"].value
    assert all(getattr(v, "value", v) not in ("", "none", None) for v in materialized.values())
    observed = [r.asset_observation for r in instance.fetch_observations(CHANGELOG, limit=10).records]
    marker = next(o for o in observed if o.metadata.get("awp/started"))
    assert marker.description.startswith("Attempt 2 started (repair)")
    # The page link, then the rest as one JSON entry (each entry costs every Attempt ~110 bytes of envelope).
    assert list(marker.metadata) == ["awp/page", "awp/started"]
    fields = marker.metadata["awp/started"].value
    assert "account" not in fields and fields["mode"] == "repair" and ".awp/events/" in fields["events"]
    failed = next(o for o in observed if "awp/result" in o.metadata)
    # What comes next first, and who launches it: here the `awp run` that drives the packet run.
    assert failed.description.startswith("repair next: Attempt ") and "did not complete: verification failed" \
        in failed.description
    assert failed.metadata["awp/next"].value.startswith("repair next — Attempt 2 (repair 1/2")
    assert failed.metadata["awp/next"].value.endswith("`awp run`, which drives this packet run, launches it")
    assert failed.metadata["awp/page"].value.endswith(".02.a1")  # its verifier items are on its page
    assert failed.metadata["awp/agent_run_state"].value.startswith(("waiting", "queued", "active"))
    # The failed step says why in one line (its description), with the unmet item in its metadata.
    [first_run] = [r for r in instance.get_runs() if len(r.asset_selection or ()) == 3]
    failures = [e.dagster_event.step_failure_data for e in instance.all_logs(
        first_run.run_id, of_type=DagsterEventType.STEP_FAILURE)]
    user = next(f.user_failure_data for f in failures if "02" in f.user_failure_data.description)
    assert user.description.endswith("verification failed — unmet: CHANGELOG.md contains “## Unreleased”")
    # Checks read as what they demand; no empty path or `fault none` rows.
    evaluation = instance.event_log_storage.get_latest_asset_check_execution_by_key(
        [check_key := _check(CHANGELOG, "changelog_md_contains_unreleased")])[check_key].evaluation
    assert evaluation.description == "CHANGELOG.md contains “## Unreleased”"
    assert set(evaluation.metadata) == {"details"}  # what was found; no empty path or `fault none` rows


def _assert_read_paths_agree(instance, demo: Path) -> None:  # type: ignore[no-untyped-def]
    """SQL storages read the Attempt events in one query and decode the stored JSON themselves: they must
    find what Dagster's own per-run API finds, with the same values, in the same order."""
    from awp_pipelines.core.packet.packet import load_packet
    from awp_pipelines.dagster_compat import events as storage
    from awp_pipelines.orchestration.compile.naming import prompt_key

    packet = load_packet(demo)
    keys = {prompt_key(packet, p.id): p.id for p in packet.prompts}
    [packet_run] = {r.tags["awp/packet_run"] for r in runs_of_packet(instance, "demo")}
    run_ids = [r.run_id for r in instance.get_runs(RunsFilter(tags={"awp/packet_run": packet_run}))]
    by_sql = storage.attempt_events(instance, run_ids, keys)
    by_run = storage.events_by_run(instance, run_ids, keys)
    assert len(by_run) == 10  # five Attempts: a marker and a record each
    assert by_sql == by_run
    assert isinstance(by_sql[-1][2]["awp/record"], dict) and isinstance(by_sql[0][2]["awp/started"]["attempt_number"],
                                                                          int)


def _check(asset: AssetKey, name: str):  # type: ignore[no-untyped-def]
    from dagster import AssetCheckKey

    return AssetCheckKey(asset, name)
