"""A newcomer's first hour, in chromium at 1400×900 over a real dagster-webserver and `awp serve` (issue 34).

The demo's first run ends with 02 waiting for its repair and 03 for its retry, and no daemon launches them: the
graph shows 02 Failed, and the run page and the asset say "repair next" and who launches it (Dagster still
prints its stack trace under the failure: docs/upstream.md §4). Then the command the failed step names,
`awp resume … --packet-run`, goes on with the packet run; the asset's Overview shows the Attempt history with
every column in view. Last, `awp serve`'s front door → the packet run → 02's first Attempt → the Attempt that
followed it, by click and by key. Screenshots stay under the test's tmp_path; their paths are printed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from first_run import REPO_ROOT, demo_run_without_daemon
from ui_pages import metadata_text, open_asset, open_asset_events, open_asset_graph, open_run, run_log_entry, screenshot
from ui_server import free_port, stop_group, wait_for_server

pytestmark = [pytest.mark.slow]

BIN = Path(sys.executable).parent
CHROMIUM = Path("/usr/bin/chromium")
CHANGELOG = ["demo", "02_write_changelog"]

# The right edge each header cell would need, against the edge of the first ancestor that clips it.
_CLIPPED = """th => { const box = th.getBoundingClientRect(); let e = th.parentElement;
  while (e && getComputedStyle(e).overflowX === 'visible') e = e.parentElement;
  const edge = e ? Math.min(e.getBoundingClientRect().right, innerWidth) : innerWidth;
  return [th.innerText.trim(), box.left, box.right, edge]; }"""


def _graph_node(page: Any, title: str) -> Any:
    return page.locator("div").filter(has=page.get_by_text(title, exact=True)).filter(
        has=page.get_by_text("Asset checks", exact=True)).last


def _start(argv: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(argv, env=env, cwd=REPO_ROOT, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)


def test_the_first_hour_reads_as_expected_from_the_graph_to_the_attempt_that_followed(
        tmp_path: Path, playwright_driver: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    if not CHROMIUM.exists():
        pytest.skip("Debian chromium is missing: bash tests/ui/install_browser.sh")
    shots, home = tmp_path / "screenshots", tmp_path / "home"
    ui_port, page_port = free_port(), free_port()
    url, pages = f"http://127.0.0.1:{ui_port}", f"http://127.0.0.1:{page_port}"
    monkeypatch.setenv("AWP_PAGE_URL", pages)  # read where the Attempts run: here, in process
    project, run_id = demo_run_without_daemon(tmp_path, home)
    packet = project / "assets" / "demo"
    env = {**os.environ, "DAGSTER_HOME": str(home), "AWP_PROJECT_ROOT": str(project), "AWP_PAGE_URL": pages}
    servers = [_start([str(BIN / "dagster-webserver"), "-w", str(REPO_ROOT / "workspace.yaml"), "-h", "127.0.0.1",
                       "-p", str(ui_port)], env, tmp_path / "webserver.log"),
               _start([str(BIN / "awp"), "serve", "--instance", str(home), "--port", str(page_port),
                       "--dagster-url", url], env, tmp_path / "serve.log")]
    browser = playwright_driver.chromium.launch_persistent_context(
        str(tmp_path / "chromium"), executable_path=str(CHROMIUM), headless=True,
        args=["--headless", "--no-sandbox", "--disable-gpu"], viewport={"width": 1400, "height": 900})
    browser.set_default_timeout(60_000)
    saved: list[Path] = []
    try:
        wait_for_server(url, servers[0], tmp_path / "webserver.log")
        wait_for_server(pages, servers[1], tmp_path / "serve.log", path="/")
        page = browser.pages[0] if browser.pages else browser.new_page()
        # -- the graph while 02 waits for its repair: Failed, in the words Dagster has for it -----------------
        open_asset_graph(page, url)
        assert _graph_node(page, "02_write_changelog").get_by_text("Failed", exact=True).count() == 1
        saved.append(screenshot(page, shots, "01-graph-02-waits-for-repair", full_page=False))
        # -- the run page: the failed step's last line and its failure say what comes next and who launches it -
        open_run(page, url, run_id)
        line = run_log_entry(page, re.compile(r"^02: repair next — Attempt 2 \(repair 1/2"))
        assert "recovery sensor" in line.inner_text() and "awp resume" in line.inner_text()
        assert page.get_by_text(re.compile(r"repair next: Attempt \S+\.02\.a1 did not complete")).count() >= 1
        saved.append(screenshot(page, shots, "02-run-page-repair-next", full_page=False))
        # -- the asset's newest event: `awp/next` right after the result ---------------------------------------
        open_asset_events(page, url, CHANGELOG)
        assert "repair next — Attempt 2" in metadata_text(page, "awp/next")
        saved.append(screenshot(page, shots, "03-asset-02-repair-next", full_page=False))
        # -- what the failed step said to do, done: the packet run goes on in this process -------------------
        packet_run = _packet_run_of(home, run_id)
        providers = project / "resources" / "providers.yaml"
        resumed = subprocess.run([str(BIN / "awp"), "resume", str(packet), "--packet-run", packet_run,
                                  "--instance", str(home), "--providers", str(providers)],
                                 env=env, capture_output=True, text=True, timeout=600)
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        # -- the Attempt history on the asset's Overview: every column in view at 1400 px -------------------
        open_asset(page, url, CHANGELOG)
        page.get_by_role("columnheader", name="mode", exact=True).first.scroll_into_view_if_needed()
        heads = page.locator("th").evaluate_all(f"ths => ths.map({_CLIPPED})")
        history = {str(name): (left, right, edge) for name, left, right, edge in heads
                   if name in ("#", "mode", "result", "run")}
        assert set(history) == {"#", "mode", "result", "run"}, heads
        assert all(left >= 0 and right <= edge <= 1400 for left, right, edge in history.values()), history
        saved.append(screenshot(page, shots, "04-overview-02-attempt-history", full_page=False))
        # -- awp serve: the front door, the packet run, 02's first Attempt, the one that followed it -----------
        page.goto(pages + "/")
        chips = page.locator("a.chip")
        assert chips.count() == 5 and page.locator("a.chip.bad").count() == 2  # 02·a1 and 03·a1 did not
        saved.append(screenshot(page, shots, "05-serve-front-door", full_page=False))
        page.keyboard.press("/")  # the filter, by key
        page.keyboard.type("repair")
        assert page.locator(f"tr[data-filter*='{packet_run}']").is_visible()
        page.locator(f"a[href='/packet-runs/{packet_run}']").click()
        page.get_by_text(f"Packet run {packet_run}").wait_for()
        saved.append(screenshot(page, shots, "06-serve-packet-run", full_page=False))
        page.locator(f"a.chip[href='/attempts/{packet_run}.02.a1']").click()
        followed = page.locator(".followed")
        assert "followed by Attempt 2: repair, completed" in followed.inner_text()
        assert page.locator("details.tool[data-tool='Write']").count() == 1  # the demo's agent wrote with a tool
        assert page.locator(".msg.user h1").inner_text() == "Write the changelog"  # the prompt as Markdown
        saved.append(screenshot(page, shots, "07-serve-attempt-02-a1", full_page=False))
        followed.get_by_role("link").click()
        page.get_by_text("Attempt 2 · repair · Write the changelog").wait_for()
        assert page.locator("details.tool[data-tool='Read']").count() == 1
        assert page.locator("details.tool[data-tool='Edit']").count() == 1
        assert page.locator(".msg time").count() >= 2  # each turn with its time
        saved.append(screenshot(page, shots, "08-serve-attempt-02-a2", full_page=False))
        page.keyboard.press("u")  # up to the packet run, by key
        page.get_by_text(f"Packet run {packet_run}").wait_for()
        # A laptop's window: the front door reads without a sideways scroll.
        page.set_viewport_size({"width": 1280, "height": 720})
        page.goto(pages + "/")
        assert page.evaluate("document.documentElement.scrollWidth") <= 1280
        saved.append(screenshot(page, shots, "09-serve-front-door-1280x720", full_page=False))
        print("\nscreenshots:\n" + "\n".join(str(p) for p in saved))
    finally:
        browser.close()
        for server in servers:
            stop_group(server)


def _packet_run_of(home: Path, run_id: str) -> str:
    from awp_pipelines.core.records import run_tags as tags
    from awp_pipelines.orchestration.ledger.instance import open_instance_folder

    instance = open_instance_folder(home)
    try:
        run = instance.get_run_by_id(run_id)
        assert run is not None
        return run.tags[tags.PACKET_RUN]
    finally:
        instance.dispose()
