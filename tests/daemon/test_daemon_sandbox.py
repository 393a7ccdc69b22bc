"""The sandbox's attack table under a real dagster-daemon (the run launched as "Materialize all" does, its
worker a process of the daemon's, started with a canary secret in its environment and an operator HOME
holding a canary): every row is denied while the Attempt's real work is verified and committed and `awp
agent-control` works from inside. Rows and agent: tests/attack_support.py (in process, and each row getting
through with `isolation: none`: tests/e2e/test_sandbox_attacks.py)."""

from __future__ import annotations

from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml
from attack_support import ROWS, SECRET, Canary, add_remote, command_provider, plant_canaries, rows_of, targets
from dagster import RunsFilter
from deployment import all_finished, deployment, embedded_home, init_workspaces, make_project
from local_servers import serving

from awp_pipelines.core.isolation.bwrap import unavailable

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(unavailable() is not None, reason=f"no sandbox here: {unavailable()}")]


def test_every_row_is_denied_under_the_daemon(tmp_path: Path) -> None:
    home = plant_canaries(tmp_path)
    dagster_home = embedded_home(tmp_path / "dagster-home")
    source = tmp_path / "src" / "attacked"
    (source / "prompts").mkdir(parents=True)
    (source / "packet.yaml").write_text(yaml.safe_dump({
        "name": "attacked", "provider": "agent", "model": "m", "timeout": "3m", "accounts": ["a"],
        "repos": {"app": {"path": "./workspace", "default": True}},
        "agent_control": {"enabled": True, "completion_verify": {"files_exist": ["work.txt"]}}}))
    server = ThreadingHTTPServer(("127.0.0.1", 0), Canary)
    body = targets(tmp_path, dagster_home, server.server_address[1])
    (source / "prompts" / "01_work.prompt.md").write_text(
        f"---\n{yaml.safe_dump({'verify': {'files_exist': ['work.txt']}})}---\n{body}\n")
    project = make_project(tmp_path / "project", {"attacked": source}, yaml.safe_dump(command_provider(tmp_path)))
    init_workspaces(project, ["attacked"])
    tree = project / "assets" / "attacked" / "workspace"
    remote = add_remote(tree)
    env = {"HOME": str(home), "AWP_PG_PASSWORD": SECRET, "AWP_TEST_AGENT_KEY": "own-key"}
    with serving(server), deployment(dagster_home, project, env) as running:
        running.launch_job("packet__attacked")

        def runs(instance):  # type: ignore[no-untyped-def]
            return instance.get_runs(filters=RunsFilter(tags={"awp/packet": "attacked"}))

        running.wait_until(lambda i: all_finished(i, runs(i)), 300, "the attacked packet's run")
        from awp_pipelines.orchestration.history import attempt_records

        with running.instance() as instance:
            records = [r for run in runs(instance) for r in attempt_records(instance, run.run_id)]
    rows = rows_of(tree, tmp_path, remote)
    assert {r: rows[r] for r in ROWS} == dict.fromkeys(ROWS, "denied"), rows
    assert (rows["own_config"], rows["agent_control"]) == ("0", "0"), rows
    [record] = records
    assert record.completed and record.commits and record.control and record.control.outcome == "finish"
    assert record.isolation is not None and record.isolation.profile.isolation == "sandbox"
