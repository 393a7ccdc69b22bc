"""The Attempt page (`awp serve`) in chromium at 1400×900, over a packet run of the real Claude Code CLI against a
local scripted Messages API: it writes, edits and runs a shell command (Write, Edit, Bash), misses a verifier
item, and its repair fixes it. The page follows the running Attempt; from the Dagster asset page one click
opens it; it shows the messages, each tool call, the edited file's diff lines, the failed item and the commit.
No copy of the account's key reaches a page or a stored diff. Screenshots stay under the test's tmp_path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from scripted_agent import EDITED_LINE, VERIFIED, scripted_agent
from ui_pages import open_asset, screenshot
from ui_server import free_port, stop_group, wait_for_server

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "providers"))
from provider_helpers import real_cli  # noqa: E402

from awp_pipelines.orchestration.ledger.factory import ledger_of  # noqa: E402
from awp_pipelines.orchestration.ledger.instance import open_instance_folder  # noqa: E402
from awp_pipelines.orchestration.views.attempt_pages import find_attempt  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
CANARY = "sk-ant-api03-pagecanary-" + "Q" * 40  # the account's key: no page or stored diff may hold it
# What the agent writes into its notes: a key of the same shape but no value AWP knows, so push protection
# (which refuses the account's own key in the work: secret_in_work) lets it through to be redacted on pages.
WORK_CANARY = "sk-ant-api03-workcanary-" + "Q" * 40


def _project(base: Path, make_git_repo: Any, claude: Path, api_url: str) -> Path:
    project = base / "project"
    packet = project / "assets" / "notes"
    make_git_repo(packet / "workspace")
    (packet / "packet.yaml").write_text(yaml.safe_dump({
        "name": "notes", "provider": "claude", "model": "claude-haiku-4-5", "timeout": "5m", "accounts": ["a"],
        "allowed_tools": ["Write", "Edit", "Bash", "Read"],
        "repos": {"work": {"path": "./workspace", "default": True}}}))
    (packet / "prompts").mkdir()
    front = {"id": "01", "name": "Write the notes", "commit": "docs: release notes",
             "verify": {"files_exist": ["NOTES.md"], "contains": [{"path": "NOTES.md", "text": VERIFIED}]}}
    (packet / "prompts" / "01_notes.prompt.md").write_text(
        f"---\n{yaml.safe_dump(front)}---\n# Write the notes\n\nWrite NOTES.md for the release.\n")
    (project / "resources").mkdir(parents=True)
    (project / "resources" / "providers.yaml").write_text(yaml.safe_dump({
        "providers": {"claude": {"kind": "claude_code", "command": str(claude), "credential_env": "ANTHROPIC_API_KEY",
                                 "config_dir_env": "CLAUDE_CONFIG_DIR", "models": ["claude-haiku-4-5"]}},
        "accounts": {"a": {"provider": "claude", "credential_env": "AWP_PAGE_KEY", "base_url": api_url,
                           "config_dir": str(base / "claude-config"), "env": {"IS_SANDBOX": "1"}}}}))
    return project


def _popen(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(args, env=env, cwd=REPO_ROOT, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)


def _attempt_id(packet: Path, number: int) -> str | None:
    found = sorted((packet / ".awp" / "events").glob(f"*/01/*.a{number}.jsonl"))
    return found[0].name.removesuffix(".jsonl") if found else None


def test_the_attempt_page_follows_the_real_cli_and_opens_from_the_asset_page(
        tmp_path: Path, make_git_repo: Any, playwright_driver: Any) -> None:
    claude = real_cli("claude")
    shots = tmp_path / "screenshots"
    home = tmp_path / "home"
    open_instance_folder(home).dispose()  # the embedded SQLite instance both servers and the run share
    (home / ".nux").mkdir()
    (home / ".nux" / "nux.yaml").write_text("seen: 1\n")  # no "Join the Dagster community" modal
    page_port, dagster_port = free_port(), free_port()
    page_url, dagster_url = f"http://127.0.0.1:{page_port}", f"http://127.0.0.1:{dagster_port}"
    with scripted_agent(tmp_path / "project" / "assets" / "notes" / "workspace", WORK_CANARY) as api:
        project = _project(tmp_path, make_git_repo, claude, api.url)
        packet = project / "assets" / "notes"
        env = {**os.environ, "AWP_PAGE_KEY": CANARY, "AWP_PAGE_URL": page_url, "DAGSTER_HOME": str(home),
               "AWP_PROJECT_ROOT": str(project), "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
               "DISABLE_AUTOUPDATER": "1"}
        serve = _popen([str(BIN / "awp"), "serve", "--instance", str(home), "--port", str(page_port),
                        "--dagster-url", dagster_url], env, tmp_path / "serve.log")
        webserver = _popen([str(BIN / "dagster-webserver"), "-w", str(REPO_ROOT / "workspace.yaml"), "-h",
                            "127.0.0.1", "-p", str(dagster_port)], env, tmp_path / "webserver.log")
        run = _popen([str(BIN / "awp"), "run", str(packet), "--instance", str(home), "--providers",
                      str(project / "resources" / "providers.yaml"), "--json"], env, tmp_path / "run.log")
        browser = playwright_driver.chromium.launch_persistent_context(
            str(tmp_path / "chromium"), executable_path="/usr/bin/chromium", headless=True,
            args=["--headless", "--no-sandbox", "--disable-gpu"], viewport={"width": 1400, "height": 900})
        browser.set_default_timeout(60_000)
        try:
            wait_for_server(page_url, serve, tmp_path / "serve.log", path="/")
            assert api.holding.wait(180), (tmp_path / "run.log").read_text()[-3000:]
            first = _attempt_id(packet, 1)
            assert first is not None
            page = browser.pages[0] if browser.pages else browser.new_page()
            # -- live: Write and Edit are on the page while the agent waits for its Bash turn ---------------
            page.goto(f"{page_url}/attempts/{first}")
            page.wait_for_selector("[data-tool='Edit']")
            assert page.locator("[data-result='running']").count() == 1
            assert page.locator("[data-tool='Bash']").count() == 0
            page.evaluate("window.__notReloaded = true")
            screenshot(page, shots, "01-attempt-running")
            page.wait_for_selector("[data-tool='Bash']", timeout=120_000)  # it came in by itself
            screenshot(page, shots, "02-attempt-running-later")
            assert run.wait(timeout=300) == 0, (tmp_path / "run.log").read_text()[-3000:]
            second = _attempt_id(packet, 2)
            assert second is not None
            # -- the first Attempt, ended: failed, its failed item, the diff of the edited file -------------
            page.goto(f"{page_url}/attempts/{first}")
            assert page.locator("[data-result='verification_failed']").count() == 1
            failed = page.locator("tr[data-passed='0']")
            assert failed.count() == 1 and VERIFIED in failed.inner_text()
            diff = page.locator(".file[data-path='NOTES.md'] .diff").inner_text()
            assert f"+{EDITED_LINE}" in diff
            for tool in ("Write", "Edit", "Bash"):
                assert page.locator(f"details[data-tool='{tool}']").count() == 1, tool
            page.locator("details[data-tool='Bash'] summary").click()
            assert EDITED_LINE in page.locator("details[data-tool='Bash'] .io").inner_text()  # its output
            assert "Let me check what is in it." in page.inner_text("main")
            screenshot(page, shots, "03-attempt-1-failed")
            first_html = page.content()
            # -- from Dagster: the asset page's first metadata entry opens the repair's page ----------------
            wait_for_server(dagster_url, webserver, tmp_path / "webserver.log")
            instance = open_instance_folder(home)
            try:
                found = find_attempt(ledger_of(instance), second)
            finally:
                instance.dispose()
            assert found is not None and found.record is not None
            open_asset(page, dagster_url, found.asset_key)
            link = page.locator(f"a[href='{page_url}/attempts/{second}']").first
            link.wait_for()
            screenshot(page, shots, "04-dagster-asset-page", full_page=False)
            with browser.expect_page() as opened:
                link.click()
            attempt = opened.value
            attempt.wait_for_load_state()
            assert attempt.url == f"{page_url}/attempts/{second}"
            text = attempt.inner_text("body")
            assert "Fixed: NOTES.md now says it is verified." in text and "Repair Instructions" in text
            assert attempt.locator("[data-result='completed']").count() == 1
            sha = found.record.commits[0].sha
            assert sha and sha in text and f"AWP-Attempt: {second}" in text
            assert f"+{VERIFIED}" in attempt.locator(".file[data-path='NOTES.md'] .diff").inner_text()
            screenshot(attempt, shots, "05-attempt-2-completed")
            # -- the AgentRun's page lists both Attempts; an unknown one is a plain 404 ------------------------
            attempt.get_by_text("all Attempts of this AgentRun").click()
            attempt.wait_for_selector("table")
            assert [attempt.locator("tr").nth(n).locator("[data-result]").get_attribute("data-result")
                    for n in (1, 2)] == ["verification_failed", "completed"]
            assert "NOTES.md contains" in attempt.locator("tr").nth(1).inner_text()  # its unmet item
            screenshot(attempt, shots, "06-agent-run")
            missing = attempt.goto(f"{page_url}/attempts/{second}9")
            assert missing is not None and missing.status == 404
            pages = first_html + attempt.content()
            diffs = "".join(p.read_text() for p in (packet / ".awp" / "events").rglob("*.diff.json"))
            assert (pages + diffs).count(CANARY) == (pages + diffs).count(WORK_CANARY) == 0 and "[REDACTED" in pages
            print(f"\nscreenshots: {shots}")
            (tmp_path / "turns.json").write_text(json.dumps(api.turns))
        finally:
            browser.close()
            for proc in (run, serve, webserver):
                stop_group(proc)

