"""The sandbox's attack table under a real dagster-daemon (the run launched as "Materialize all" does, its
worker a process of the daemon's, started with a canary secret in its environment and an operator HOME
holding a canary), with a `command` agent and with the real Claude Code CLI (against the local fake Messages
API, running the same script through its own Bash tool): every row is denied while the Attempt's real work is
verified and committed and `awp agent-control` works from inside. Rows and agents: tests/attack_support.py (in
process, and each row getting through with `isolation: none`: tests/e2e/test_sandbox_attacks.py)."""

from __future__ import annotations

import subprocess
from http.server import ThreadingHTTPServer
from pathlib import Path

import attack_support as attack
import pytest
import yaml
from deployment import all_finished, deployment, embedded_home, init_workspaces, make_project
from e2e_support import attempt_records, runs_of_packet
from local_servers import serving

from awp_pipelines.core.engine.attempt_record import AttemptRecord
from awp_pipelines.core.isolation.bwrap import unavailable

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(unavailable() is not None, reason=f"no sandbox here: {unavailable()}")]


def attempts_of_launched(dagster_home: Path, project: Path, env: dict[str, str]) -> list[AttemptRecord]:
    """Launch the packet's job as "Materialize all" does, wait for its run, and return its Attempt records."""
    with deployment(dagster_home, project, env) as running:
        running.launch_job("packet__attacked")

        def runs(instance):  # type: ignore[no-untyped-def]
            return runs_of_packet(instance, "attacked")

        running.wait_until(lambda i: all_finished(i, runs(i)), 300, "the attacked packet's run")
        with running.instance() as instance:
            return [r for run in runs(instance) for r in attempt_records(instance, run.run_id)]


@pytest.mark.parametrize("agent", attack.AGENTS)
def test_every_row_is_denied_under_the_daemon(tmp_path: Path, agent: str) -> None:
    home = attack.plant_canaries(tmp_path)
    dagster_home = embedded_home(tmp_path / "dagster-home")
    source = tmp_path / "src" / "attacked"
    (source / "prompts").mkdir(parents=True)
    (source / "packet.yaml").write_text(yaml.safe_dump({
        "name": "attacked", **attack.MANIFESTS[agent], "timeout": "3m", "accounts": ["a"],
        "repos": {"app": {"path": "./workspace", "default": True}},
        "agent_control": {"enabled": True, "completion_verify": {"files_exist": ["work.txt"]}}}))
    server = ThreadingHTTPServer(("127.0.0.1", 0), attack.Canary)
    body = attack.targets(tmp_path, dagster_home, server.server_address[1])
    (source / "prompts" / "01_work.prompt.md").write_text(
        f"---\n{yaml.safe_dump({'verify': {'files_exist': ['work.txt']}})}---\n{body}\n")
    env = {"HOME": str(home), "AWP_PG_PASSWORD": attack.SECRET, "AWP_TEST_AGENT_KEY": "own-key", **attack.QUIET_CLI}
    with serving(server), attack.attacking_api(body) as api:
        project = make_project(tmp_path / "project", {"attacked": source},
                               yaml.safe_dump(attack.agent_provider(tmp_path, agent, api)))
        init_workspaces(project, ["attacked"])
        tree = project / "assets" / "attacked" / "workspace"
        remote = attack.add_remote(tree)
        records = attempts_of_launched(dagster_home, project, env)
    rows = attack.rows_of(tree, tmp_path, remote)
    assert {r: rows[r] for r in attack.ROWS} == dict.fromkeys(attack.ROWS, "denied"), rows
    assert (rows["own_config"], rows["agent_control"]) == ("0", "0"), rows
    # its own config folder is a scoped copy, read-write in the session and discarded after it (docs/security.md)
    assert not (tmp_path / "accounts" / "a" / "own.txt").exists()
    [record] = records
    assert record.completed and record.commits and record.control and record.control.outcome == "finish"
    assert "the real work" in subprocess.run(["git", "show", f"{record.commits[0].sha}:work.txt"], cwd=tree,
                                             capture_output=True, text=True, check=True).stdout
    assert record.isolation is not None and record.isolation.profile.isolation == "sandbox"
    if agent == "claude":  # the real CLI asked the fake API with its own credential, through the egress
        assert {key for _, key, _ in api.requests} == {"own-key"}, api.requests
        assert record.isolation.grants is not None
        assert f"127.0.0.1:{api.server_address[1]}" in record.isolation.grants.hosts
