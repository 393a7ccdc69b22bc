"""The Runs list at 1400x900 (issue 26 item 5): Dagster shows every run tag outside its own `dagster/` namespace
on a line of its own in each row, so a run carries only the tags a user filters on (its packet run; its account
when a launcher chose one, for the run queue's per-account limit) and a screen holds at least eight runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ui_pages import fully_visible_run_rows, listed_run_ids, open_runs, screenshot
from ui_server import DagsterUi

pytestmark = [pytest.mark.slow, pytest.mark.postgres]


def test_a_screen_of_the_runs_list_holds_at_least_eight_runs(browser_page: Any, crowded_ui: DagsterUi,
                                                              shots: Path) -> None:
    url, page = crowded_ui.url, browser_page
    open_runs(page, url)
    page.wait_for_timeout(500)  # the virtual list measures its rows once they rendered
    shot = screenshot(page, shots, "runs-1400x900", full_page=False)
    assert shot.stat().st_size > 10_000
    visible = fully_visible_run_rows(page)
    # Four demo packet runs: each the selection, then 02's repair (and 03's retry the first time).
    assert len(listed_run_ids(page)) >= 8
    assert len(visible) >= 8, f"{len(visible)} runs fully visible at 1400x900 (see {shot})"
    body = page.inner_text("body")
    assert "awp/packet_run: pr-" in body and "awp/attempt:" not in body and "user: awp run" not in body
