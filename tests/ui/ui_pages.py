"""Page helpers for the browser tests: open a Dagster UI page, wait until it has rendered, read it.

Every `open_*` navigates, waits for the app to settle and returns the page; read with playwright's own API
(`page.get_by_text(...)`, `page.inner_text("body")`) or the `*_text` helpers here. URLs are the webserver's
own routes (dagster-webserver 1.13): /asset-groups, /assets/<key path>, /runs, /runs/<run id>.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import quote, urlencode

from playwright.sync_api import Locator, Page

SETTLE_MS = 30_000  # first loads compile the GraphQL schema and load the code location


def _goto(page: Page, base_url: str, path: str, ready: str | None = None) -> Page:
    page.goto(base_url.rstrip("/") + path)
    page.wait_for_load_state("networkidle", timeout=SETTLE_MS)
    dismiss_community_modal(page)
    if ready:
        page.get_by_text(ready).first.wait_for(timeout=SETTLE_MS)
    return page


def dismiss_community_modal(page: Page) -> None:
    """The first-load "Join the Dagster community" dialog; nux.yaml usually suppresses it already."""
    skip = page.get_by_role("button", name="Skip")
    if skip.count():
        skip.first.click()


def key_url(key_path: Sequence[str]) -> str:
    return "/assets/" + "/".join(quote(part, safe="") for part in key_path)


# The graph's node titles carry no test id; the CSS module class keeps its readable prefix across builds.
_GRAPH_NODE_TITLE = "[class*='AssetNode_assetName'] [data-tooltip]"


def open_asset_graph(page: Page, base_url: str) -> Page:
    """The global asset lineage graph: one node per prompt asset."""
    _goto(page, base_url, "/asset-groups")
    page.locator(_GRAPH_NODE_TITLE).first.wait_for(timeout=SETTLE_MS)
    # Nodes render before their status: wait until none says "Loading…".
    page.wait_for_function("() => !/Loading(\\.\\.\\.|…)/.test(document.body.innerText)", timeout=SETTLE_MS)
    return page


def graph_node_titles(page: Page) -> list[str]:
    """The titles of the asset graph's nodes as displayed (full text, even when the node truncates it)."""
    titles = page.locator(_GRAPH_NODE_TITLE).evaluate_all("els => els.map(e => e.dataset.tooltip)")
    return sorted({str(t) for t in titles if t})


def open_asset(page: Page, base_url: str, key_path: Sequence[str], view: str | None = None) -> Page:
    """An asset's page: `view` None (Overview), "events", "checks", "lineage"."""
    query = f"?{urlencode({'view': view})}" if view else ""
    return _goto(page, base_url, key_url(key_path) + query, ready="Overview")


def open_asset_events(page: Page, base_url: str, key_path: Sequence[str]) -> Page:
    """The Events tab: the latest materialization or observation is selected and its metadata shown."""
    return open_asset(page, base_url, key_path, view="events")


def open_asset_check(page: Page, base_url: str, key_path: Sequence[str], check_name: str) -> Page:
    """One check's detail on the asset's Checks tab (its description, latest evaluation, metadata)."""
    query = urlencode({"view": "checks", "checkDetail": check_name})
    return _goto(page, base_url, f"{key_url(key_path)}?{query}", ready="Execution history")


def metadata_row(page: Page, label: str) -> Locator:
    """The row of the metadata table (Overview or Events tab) whose key is `label`, e.g. "awp/result"."""
    return page.locator("tr").filter(has=page.get_by_text(label, exact=True)).first


def metadata_text(page: Page, label: str) -> str:
    row = metadata_row(page, label)
    row.wait_for(timeout=SETTLE_MS)
    return row.inner_text()


def open_markdown_metadata(page: Page, label: str) -> str:
    """A Markdown metadata value too long to show inline opens behind "[Show Markdown]": click it, return the
    dialog's rendered text (the dialog stays open for a screenshot; `close_dialog` closes it)."""
    row = metadata_row(page, label)
    row.wait_for(timeout=SETTLE_MS)
    button = row.get_by_text("[Show Markdown]")
    if not button.count():
        return row.inner_text()  # short values render inline
    button.first.click()
    dialog = page.get_by_role("dialog").last
    dialog.wait_for(timeout=SETTLE_MS)
    page.wait_for_timeout(400)  # the dialog fades in: a screenshot taken at once shows the page through it
    return dialog.inner_text()


def close_dialog(page: Page) -> None:
    page.keyboard.press("Escape")


def open_transcript(page: Page, base_url: str, key_path: Sequence[str]) -> str:
    """The latest materialization's transcript (metadata `awp/transcript`) as the user reads it."""
    open_asset(page, base_url, key_path)
    return open_markdown_metadata(page, "awp/transcript")


# The table header renders before its rows: wait for a run's id link, or for the empty state.
_RUNS_LOADED = """() => [...document.querySelectorAll("a[href^='/runs/']")]
    .some(a => /^[0-9a-f]{8}$/.test(a.innerText.trim())) || /No runs/i.test(document.body.innerText)"""


def open_runs(page: Page, base_url: str) -> Page:
    _goto(page, base_url, "/runs", ready="Launched by")
    page.wait_for_function(_RUNS_LOADED, timeout=SETTLE_MS)
    return page


def runs_filtered_by_tag(page: Page, base_url: str, key: str, value: str) -> Page:
    """The Runs list filtered as the UI's own tag filter does (`tag:key=value`), e.g. a commit sha tag."""
    _goto(page, base_url, "/runs?" + urlencode({"q[]": f"tag:{key}={value}"}), ready="Launched by")
    page.wait_for_function(_RUNS_LOADED, timeout=SETTLE_MS)
    return page


def open_run(page: Page, base_url: str, run_id: str) -> Page:
    """A run's page: its event log (`context.log` lines, live-feed batches) and step timeline."""
    return _goto(page, base_url, f"/runs/{run_id}")


def run_log_entry(page: Page, text: str | re.Pattern[str]) -> Locator:
    """The first entry of an open run's event log showing `text` (a `context.log` line, a live-feed batch),
    scrolled into view so a screenshot shows it."""
    entry = page.get_by_text(text).first
    entry.wait_for(timeout=SETTLE_MS)
    entry.scroll_into_view_if_needed()
    return entry


_RUN_ID_CELL = re.compile(r"^[0-9a-f]{8}$")


def listed_run_ids(page: Page) -> list[str]:
    """Short (8-hex) run ids in the Runs list as shown, top to bottom."""
    links = page.locator("a[href^='/runs/']").all_inner_texts()
    return [text.strip() for text in links if _RUN_ID_CELL.match(text.strip())]


# A row of the Runs list (dagster-ui's RunsFeedRow); the CSS module class keeps its readable prefix across builds.
_RUN_ROW = "[class*='RunsFeedRow_rowGrid']"


def fully_visible_run_rows(page: Page) -> list[str]:
    """The short ids of the Runs list's rows that show whole in the window, without scrolling."""
    boxes = page.locator(_RUN_ROW).evaluate_all("""rows => rows.map(row => {
        const box = row.getBoundingClientRect();
        const id = [...row.querySelectorAll("a[href^='/runs/']")].map(a => a.innerText.trim())
            .find(text => /^[0-9a-f]{8}$/.test(text)) || "";
        return [id, box.top, box.bottom];
    })""")
    height = page.viewport_size["height"] if page.viewport_size else 0
    return [str(run_id) for run_id, top, bottom in boxes if run_id and top >= 0 and bottom <= height]


def screenshot(page: Page, folder: Path, name: str, full_page: bool = True, height: int | None = None) -> Path:
    """Save `<folder>/<name>.png` (folder created); returns the file. Lists such as Runs scroll inside their
    own pane, which `full_page` cannot unroll: `height` makes the window that tall for the shot."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    size = page.viewport_size
    if height and size:
        page.set_viewport_size({"width": size["width"], "height": height})
        page.wait_for_timeout(300)  # let the list render the rows that came into view
    try:
        page.screenshot(path=str(path), full_page=full_page)
    finally:
        if height and size:
            page.set_viewport_size(size)
    return path
