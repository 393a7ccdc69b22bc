"""The Dagster UI after a demo run on PostgreSQL, read in headless chromium: what a user sees, with screenshots."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from ui_pages import (
    close_dialog,
    graph_node_titles,
    listed_run_ids,
    metadata_row,
    metadata_text,
    open_asset,
    open_asset_check,
    open_asset_events,
    open_asset_graph,
    open_markdown_metadata,
    open_run,
    open_runs,
    open_transcript,
    run_log_entry,
    runs_filtered_by_tag,
    screenshot,
)
from ui_server import DagsterUi

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

TITLES = ["01_write_greeting", "02_write_changelog", "03_write_status_report"]
CHANGELOG = ["demo", "02_write_changelog"]


def test_asset_graph_shows_the_prompts_and_the_runs_list_shows_every_attempt(
        ui: tuple[str, Any], dagster_ui: DagsterUi, shots: Path) -> None:
    url, page = ui
    open_asset_graph(page, url)
    # Each node says what its prompt does, after the id the graph sorts by.
    assert sorted(graph_node_titles(page)) == TITLES
    assert page.get_by_text("Materialized", exact=True).count() == len(TITLES)  # every prompt completed
    assert screenshot(page, shots, "asset-graph").stat().st_size > 10_000

    open_runs(page, url)
    body = page.inner_text("body")
    # The three prompts in one run (as "Materialize all" launches them), then 02's repair and 03's retry,
    # each a run of its own: every row shows its packet run, and no Attempt, mode or target (its metadata).
    packet_run = dagster_ui.run_output["packet_run"]
    assert body.count(f"awp/packet_run: {packet_run}") == 3
    assert "awp/attempt:" not in body and "awp/prompts:" not in body and "awp/mode:" not in body
    assert all(attempt.endswith(".a2") for attempt in dagster_ui.attempts()[1:])
    finals = {o["dagster_run"][:8] for o in dagster_ui.run_output["prompts"]}
    listed = listed_run_ids(page)
    assert len(listed) == 3 and finals == set(listed)
    screenshot(page, shots, "runs", height=2000)


def test_runs_filter_by_tag_and_the_transcript_shows_the_repair_prompt(
        ui: tuple[str, Any], dagster_ui: DagsterUi, shots: Path) -> None:
    url, page = ui
    # The Attempt page's "packet run" link: the Runs list filtered by the packet-run tag holds all three runs.
    runs_filtered_by_tag(page, url, "awp/packet_run", dagster_ui.run_output["packet_run"])
    assert set(listed_run_ids(page)) == {o["dagster_run"][:8] for o in dagster_ui.run_output["prompts"]}
    assert len(listed_run_ids(page)) == 3
    screenshot(page, shots, "runs-filtered-by-packet-run")

    # The repair's materialization carries the AgentRun's Attempt history: the run failed, then the repair.
    open_asset(page, url, CHANGELOG)
    history = open_markdown_metadata(page, "awp/attempts")
    assert "✗\u00a0verification failed" in history and "repair\t✓\u00a0completed" in history
    close_dialog(page)

    transcript = open_transcript(page, url, CHANGELOG)
    screenshot(page, shots, "transcript-02", full_page=False)
    # The prompt as sent, then the repair's unmet item, then what the agent did.
    assert "Create CHANGELOG.md with a ## Unreleased section" in transcript
    assert "Repair Instructions" in transcript and "text not found: '## Unreleased'" in transcript
    assert transcript.index("Repair Instructions") < transcript.index("Adding the missing Unreleased section.")


def test_the_repair_attempt_can_be_followed_from_its_asset_events_to_a_check_and_its_run(
        ui: tuple[str, Any], dagster_ui: DagsterUi, shots: Path) -> None:
    url, page = ui
    repair = next(o for o in dagster_ui.run_output["prompts"] if o["prompt"] == "02")
    open_asset_events(page, url, CHANGELOG)
    assert "repair" in metadata_text(page, "awp/mode")
    assert repair["attempt"] in metadata_text(page, "awp/attempt")
    screenshot(page, shots, "asset-02-events", full_page=False)

    open_asset_check(page, url, CHANGELOG, "changelog_md_contains_unreleased")
    body = page.inner_text("body")
    # A name a person reads, and a description that says what the clause demands.
    assert "changelog_md_contains_unreleased" in body and "CHANGELOG.md contains “## Unreleased”" in body
    assert "Passed" in body
    screenshot(page, shots, "check-02-contains", full_page=False)

    open_run(page, url, repair["dagster_run"])
    run_log_entry(page, f"Attempt {repair['attempt']} ended completed")
    screenshot(page, shots, "run-02-repair", full_page=False)


def test_the_failed_attempt_is_not_a_success_event_and_the_history_fits_1400_px(
        ui: tuple[str, Any], shots: Path) -> None:
    """02's first Attempt failed verification (its repair completed it): in the asset's events it is an
    observation, not a materialization; every column of the Attempt history shows at 1400 px."""
    url, page = ui
    open_asset_events(page, url, CHANGELOG)
    for column in ("#", "mode", "result", "run"):  # the latest event's history table (the rest on its page)
        box = page.get_by_role("columnheader", name=column, exact=True).first.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 1400, (column, box)
    screenshot(page, shots, "asset-02-history", full_page=False)
    events = page.get_by_text(re.compile(r"^[A-Z][a-z]{2} \d+, \d+:\d\d [AP]M$"))
    failed = []
    for n in range(events.count()):
        events.nth(n).click()
        page.wait_for_timeout(300)
        result = metadata_row(page, "awp/result")  # a start marker has none
        if result.count() and "verification_failed" in result.inner_text():
            # What comes next reads beside the result: the repair is queued, not a crash and not done.
            state = metadata_text(page, "awp/agent_run_state")
            assert "waiting" in state and "repair" in state, state
            failed.append(page.inner_text("body"))
            screenshot(page, shots, "asset-02-failed-attempt", full_page=False)
    assert failed and all("Observed in run" in body and "Materialized in run" not in body for body in failed)

