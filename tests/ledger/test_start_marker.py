"""An Attempt's start marker is stored as the page link and one JSON entry (ledger/start_marker.py), and every
reader sees it flat, as markers stored before it (one metadata entry per field) still read."""

from __future__ import annotations

from pathlib import Path

from dagster import AssetKey, AssetObservation, DagsterRunStatus, MetadataValue
from dagster._core.test_utils import create_run_for_test

from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.dagster_compat.events import report_observation
from awp_pipelines.orchestration.ledger.factory import ledger_of
from awp_pipelines.orchestration.ledger.history import ATTEMPT_STARTED, flat, marker_metadata
from awp_pipelines.orchestration.ledger.instance import open_instance_folder
from awp_pipelines.orchestration.views.attempt_pages import find_attempt

KEY = AssetKey(["marker", "p01"])


def _marker(number: int) -> dict[str, object]:
    return {tags.PAGE: f"http://127.0.0.1:3001/attempts/pr-m.01.a{number}", tags.EVENT: ATTEMPT_STARTED,
            tags.ATTEMPT: f"pr-m.01.a{number}", tags.ATTEMPT_NUMBER: number, tags.MODE: "run" if number == 1
            else "repair", tags.PROVIDER: "simulated", tags.MODEL: "sim-1", tags.ACCOUNT: None,
            tags.INTENT: f"body:{number}", tags.EVENTS: f"/state/events/pr-m.01.a{number}.jsonl"}


def test_a_marker_is_stored_as_its_page_and_one_json_entry_and_read_back_flat() -> None:
    stored = marker_metadata(_marker(2))
    assert list(stored) == [tags.PAGE, tags.STARTED]  # the page first: one click from the asset page
    assert isinstance(stored[tags.PAGE], MetadataValue.url("x").__class__)
    plain = {k: getattr(v, "value", v) for k, v in stored.items()}
    expected = {k: v for k, v in _marker(2).items() if v is not None}
    assert flat(plain) == expected
    record_meta = {tags.RESULT: "completed", tags.ATTEMPT: "pr-m.01.a2"}
    assert flat(record_meta) == record_meta  # anything but a marker is left as it is


def test_markers_of_both_forms_are_read_by_the_history_and_the_attempt_lookup(tmp_path: Path) -> None:
    instance = open_instance_folder(tmp_path / "home")
    try:
        ledger = ledger_of(instance)
        run = create_run_for_test(instance, job_name="marker__job", status=DagsterRunStatus.STARTED,
                                  tags={tags.PACKET_RUN: "pr-m"}).run_id
        # Attempt 1 as an instance made before `awp/started` holds it: one entry per field.
        old = {k: v for k, v in _marker(1).items() if v is not None}
        report_observation(instance, run, "marker__job", AssetObservation(asset_key=KEY, metadata=old))
        ledger.record_started(run, KEY, _marker(2))
        whole = ledger.history("pr-m", {KEY: "01"}).agent_runs["01"]
        assert {n: (mode, target.provider, target.model) for n, (_, mode, target) in whole.started.items()} == {
            1: ("run", "simulated", "sim-1"), 2: ("repair", "simulated", "sim-1")}
        assert whole.intents == {1: "body:1", 2: "body:2"}
        for number in (1, 2):
            found = find_attempt(ledger, f"pr-m.01.a{number}")
            assert found is not None and found.number == number
            assert found.started[tags.EVENTS] == f"/state/events/pr-m.01.a{number}.jsonl"
    finally:
        instance.dispose()
