"""State at a glance in the Dagster UI (issue 26 item 4), chromium at 1400×900 over a real dagster-webserver.

The demo packet's job runs once in process, as "Materialize all" from the UI launches it, with no daemon: 01
completes, 02 misses a verifier item (its repair is due) and 03 hits a rate limit (its retry is due). Nothing
launches them, so the UI holds that moment: the failed Attempts' assets read Failed in the graph, and a failed
Attempt is not a materialization in its asset's events. Then 02's repair is launched through the webserver's
GraphQL as `awp repair` decides it, into the run queue of a deployment's instance (QueuedRunCoordinator) with no
daemon to start it: the graph shows it queued, not done, and the Runs list shows it Queued in its packet run.
Screenshots stay under the test's tmp_path.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from first_run import demo_run_without_daemon
from ui_pages import open_asset_events, open_asset_graph, open_runs, screenshot
from ui_server import free_port, stop_group, wait_for_server

from awp_pipelines.core.packet.packet import load_packet
from awp_pipelines.core.packet.providers_config import load_catalog
from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.dagster_compat.tags import PARENT_RUN_ID_TAG, ROOT_RUN_ID_TAG
from awp_pipelines.orchestration.assets import packet_assets
from awp_pipelines.orchestration.compile.attempt_config import launch_run_config
from awp_pipelines.orchestration.compile.naming import job_name
from awp_pipelines.orchestration.driver.manual_repair import plan_repair
from awp_pipelines.orchestration.ledger.factory import ledger_of
from awp_pipelines.orchestration.ledger.instance import open_instance_folder

pytestmark = [pytest.mark.slow]

REPO_ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
CHROMIUM = Path("/usr/bin/chromium")


def _demo_run_without_daemon(base: Path, home: Path) -> tuple[Path, str]:
    """The demo's first run, then a queued-run instance: launched runs wait, as in a deployment with no daemon."""
    project, run_id = demo_run_without_daemon(base, home)
    # From here on, launched runs wait in the queue, as in a deployment (the repo's dagster.yaml); no daemon
    # starts them.
    config = home / "dagster.yaml"
    config.write_text(config.read_text().replace("class: DefaultRunCoordinator", "class: QueuedRunCoordinator"))
    return project, run_id


_LAUNCH = """mutation($p: ExecutionParams!) { launchRun(executionParams: $p) { __typename
  ... on LaunchRunSuccess { run { runId status } } ... on PythonError { message } } }"""


def _queue_repair(url: str, project: Path, home: Path, root_run: str, prompt: str) -> dict[str, Any]:
    """`prompt`'s repair as `awp repair` decides it, launched as the UI launches a run (GraphQL `launchRun`)."""
    packet = project / "assets" / "demo"
    compiled = packet_assets(load_packet(packet), load_catalog(project / "resources" / "providers.yaml"))
    instance = open_instance_folder(home)
    try:
        root = instance.get_run_by_id(root_run)
        assert root is not None
        packet_run, launch = plan_repair(ledger_of(instance), compiled.binding, prompt,
                                         root.tags[tags.PACKET_RUN], None)
    finally:
        instance.dispose()
    key = compiled.binding.key(prompt)
    run_tags = {**launch.run_tags(packet_run), PARENT_RUN_ID_TAG: root_run,
                ROOT_RUN_ID_TAG: root_run}
    params = {"selector": {"repositoryLocationName": "awp_pipelines", "repositoryName": "__repository__",
                           "jobName": job_name(compiled.packet), "assetSelection": [{"path": list(key.path)}]},
              "runConfigData": launch_run_config(key, launch), "mode": "default",
              "executionMetadata": {"tags": [{"key": k, "value": v} for k, v in run_tags.items()]}}
    request = urllib.request.Request(f"{url}/graphql", headers={"Content-Type": "application/json"},
                                     data=json.dumps({"query": _LAUNCH, "variables": {"p": params}}).encode())
    with urllib.request.urlopen(request, timeout=60) as answer:
        launched = json.loads(answer.read())["data"]["launchRun"]
    assert launched["__typename"] == "LaunchRunSuccess", launched
    return dict(launched["run"])


def _graph_node(page: Any, title: str) -> Any:
    """One asset node of the lineage graph: the innermost element holding its title and its rows."""
    return page.locator("div").filter(has=page.get_by_text(title, exact=True)).filter(
        has=page.get_by_text("Asset checks", exact=True)).last


def test_the_ui_tells_a_failed_attempt_and_a_queued_repair_from_a_success(
        tmp_path: Path, playwright_driver: Any) -> None:
    if not CHROMIUM.exists():
        pytest.skip("Debian chromium is missing: bash tests/ui/install_browser.sh")
    shots = tmp_path / "screenshots"
    home = tmp_path / "home"
    project, run_id = _demo_run_without_daemon(tmp_path, home)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "DAGSTER_HOME": str(home), "AWP_PROJECT_ROOT": str(project)}
    log = tmp_path / "webserver.log"
    with log.open("wb") as out:
        webserver = subprocess.Popen([str(BIN / "dagster-webserver"), "-w", str(REPO_ROOT / "workspace.yaml"), "-h",
                                      "127.0.0.1", "-p", str(port)], env=env, cwd=REPO_ROOT, stdout=out,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    browser = playwright_driver.chromium.launch_persistent_context(
        str(tmp_path / "chromium"), executable_path=str(CHROMIUM), headless=True,
        args=["--headless", "--no-sandbox", "--disable-gpu"], viewport={"width": 1400, "height": 900})
    browser.set_default_timeout(60_000)
    try:
        wait_for_server(url, webserver, log)
        page = browser.pages[0] if browser.pages else browser.new_page()
        # -- the graph: the failed Attempts' assets read Failed (red), the completed one Materialized (green) --
        open_asset_graph(page, url)
        for title in ("02_write_changelog", "03_write_status_report"):
            failed = _graph_node(page, title).get_by_text("Failed", exact=True)
            assert failed.count() == 1, title
            assert failed.evaluate("e => getComputedStyle(e).color") != _green_of(page), title
        assert _graph_node(page, "01_write_greeting").get_by_text("Materialized", exact=True).count() == 1
        screenshot(page, shots, "02-graph-failed-attempts", full_page=False)
        # -- the asset's events: a failed Attempt is an observation, never a materialization's success icon ----
        open_asset_events(page, url, ["demo", "02_write_changelog"])
        icons = page.locator("[role='img'][aria-label='observation'], [role='img'][aria-label='run_success']")
        labels = icons.evaluate_all("els => els.map(e => e.getAttribute('aria-label'))")
        assert labels and set(labels) == {"observation"}, labels
        assert "did not complete: verification failed" in page.inner_text("body")
        screenshot(page, shots, "03-events-failed-attempt", full_page=False)
        open_asset_events(page, url, ["demo", "01_write_greeting"])
        assert page.locator("[role='img'][aria-label='run_success']").count() >= 1
        # -- 02's repair queued: its node is neither Failed nor Materialized but queued (a stopped spinner) ----
        queued = _queue_repair(url, project, home, run_id, "02")
        assert queued["status"] == "QUEUED"
        open_asset_graph(page, url)
        node = _graph_node(page, "02_write_changelog")
        node.get_by_text(queued["runId"][:8]).wait_for()
        assert node.get_by_text("Materializing...").count() == 1 and node.get_by_text("Failed").count() == 0
        assert node.locator("[class*='Spinner_stopped']").count() == 1  # Dagster's "queued", not running
        screenshot(page, shots, "04-graph-repair-queued", full_page=False)
        open_runs(page, url)
        page.get_by_text("Queued (1)").wait_for()  # the Runs page's Queued tab counts it
        link = page.locator(f"a[href='/runs/{queued['runId']}']").first
        row = link.locator("xpath=ancestor::*[.//*[text()='Queued']][1]").inner_text()  # its row, its status
        # Its packet run and job (the prompt is not in the row: the graph's spinner above names it).
        assert f"{tags.PACKET_RUN}: " in row and "packet__demo" in row, row
        screenshot(page, shots, "05-runs-repair-queued", full_page=False)
        print(f"\nscreenshots: {shots}")
    finally:
        browser.close()
        stop_group(webserver)


def _green_of(page: Any) -> str:
    """The colour Dagster's theme gives green text ("Materialized"), as the browser computes it."""
    return str(page.evaluate("""() => { const e = document.createElement('span');
        e.style.color = 'var(--color-text-green)'; document.body.appendChild(e);
        const c = getComputedStyle(e).color; e.remove(); return c; }"""))
