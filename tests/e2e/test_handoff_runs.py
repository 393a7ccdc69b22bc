"""A packet run of the demo with a forge configured hands its work off: `awp run` in process (the SDK, so the
forge's API is recorded with `responses` in this process) pushes the branch to a local bare remote and opens one
pull request listing the 3 prompts and 5 Attempts; a second packet run updates it; `awp status` shows its URL."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import responses
from click.testing import CliRunner
from dagster import RunsFilter

from awp_pipelines import api
from awp_pipelines.cli import cli
from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.orchestration.ledger.instance import open_instance
from tests.forge_support import (
    GITHUB_PULLS,
    TOKEN,
    TOKEN_VAR,
    forge_demo,
    github_open_then_update,
    github_pr,
    sent,
)


def test_a_demo_packet_run_opens_one_pull_request_and_the_next_updates_it(
        demo_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TOKEN_VAR, TOKEN)
    demo = forge_demo(demo_copy, tmp_path)
    with responses.RequestsMock() as forge:
        github_open_then_update(forge)
        first = api.run(demo.packet, providers=demo.providers)
        pushed = demo.remote_branch()
        second = api.run(demo.packet, providers=demo.providers)
        methods = [c.request.method + " " + c.request.url.split("?")[0] for c in forge.calls]
        opened, updated = sent(forge.calls[1]), sent(forge.calls[3])
        # By hand, as a retry would: `awp handoff` finds the open pull request again and updates it.
        forge.get(GITHUB_PULLS, json=[github_pr(7)])
        forge.patch(f"{GITHUB_PULLS}/7", json=github_pr(7))
        again = CliRunner().invoke(cli, ["handoff", str(demo.packet), "--providers", str(demo.providers), "--json"],
                                   catch_exceptions=False)
        shown = CliRunner().invoke(cli, ["status", str(demo.packet), "--providers", str(demo.providers)],
                                   catch_exceptions=False)
    assert first.ok and second.ok and first.packet_run != second.packet_run
    # One pull request: looked for by its head branch, opened once, then found and updated.
    assert methods == [f"GET {GITHUB_PULLS}", f"POST {GITHUB_PULLS}", f"GET {GITHUB_PULLS}", f"PATCH {GITHUB_PULLS}/7"]
    assert [h.action for h in first.handoff] == ["opened"] and [h.action for h in second.handoff] == ["updated"]
    assert pushed == first.handoff[0].commit and demo.remote_branch() == demo.head()
    body = opened["body"]
    assert re.findall(r"^### (\d\d) ", body, re.M) == ["01", "02", "03"]
    rows = re.findall(rf"^\| \[({first.packet_run}\.\d\d\.a\d)\]\(http[^)]*/attempts/\1\) \| (\w+) \|", body, re.M)
    assert [(a.rsplit(".", 2)[1:], mode) for a, mode in rows] == [
        (["01", "a1"], "run"), (["02", "a1"], "run"), (["02", "a2"], "repair"), (["03", "a1"], "run"),
        (["03", "a2"], "retry")]
    assert opened["title"] == f"AWP demo: 3/3 prompts completed (packet run {first.packet_run})"
    assert second.packet_run in updated["body"] and first.packet_run not in updated["body"]
    assert again.exit_code == 0 and json.loads(again.output)["handoff"][0]["action"] == "updated"
    assert "hand-off: docs: pull request updated: https://github.com/acme/docs/pull/7 (branch awp/demo/handoff" \
        in shown.output
    report = api.status(demo.packet, providers=demo.providers)
    assert report.packet_run == second.packet_run
    assert [(h.action, h.url) for h in report.handoff] == [("updated", "https://github.com/acme/docs/pull/7")]
    assert TOKEN not in report.model_dump_json() + (demo.workspace / ".git" / "config").read_text()
    # The Dagster UI shows it too: a tag of the packet run's first run (its "Materialize all").
    instance = open_instance(demo.packet)
    try:
        first_runs = instance.get_runs(RunsFilter(tags={tags.PACKET_RUN: first.packet_run}), ascending=True)
    finally:
        instance.dispose()
    assert [r.tags.get(tags.PULL_REQUEST) for r in first_runs] == ["https://github.com/acme/docs/pull/7", None, None]
