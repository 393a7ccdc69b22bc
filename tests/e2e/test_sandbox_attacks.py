"""The sandbox's attack table, with a `command` agent and with the real Claude Code CLI (against the local
fake Messages API, running the same script through its own Bash tool), run by `awp run` in its own process:
each row is denied while the same Attempt's real work is written, verified and committed and `awp
agent-control` works from inside; and each row gets through with `isolation: none`, so the table tests the
sandbox, not the script (the hook it then writes into `.git` ends that Attempt `tree_tampered`).

The runner is a real `awp` process started with a canary secret in its environment (as a database password
would be), an operator HOME holding a canary file, and a second account whose config folder holds one.
The packet is its own work tree (`path: .`), so the instance (`.awp/`) sits inside the granted tree.
"""

from __future__ import annotations

import json
import subprocess
import sys
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml
from attack_support import (
    AGENTS,
    MANIFESTS,
    QUIET_CLI,
    ROWS,
    SECRET,
    Canary,
    add_remote,
    agent_provider,
    attacking_api,
    plant_canaries,
    rows_of,
    targets,
)
from e2e_support import git_log, stored_records
from local_servers import serving

from awp_pipelines.core.isolation.bwrap import unavailable

pytestmark = pytest.mark.skipif(unavailable() is not None, reason=f"no sandbox here: {unavailable()}")


def attack_packet(root: Path, make_git_repo, manifest: dict[str, object], body: str) -> Path:  # type: ignore[no-untyped-def]
    make_git_repo(root)
    add_remote(root)
    (root / "packet.yaml").write_text(yaml.safe_dump({
        "name": "attacked", "timeout": "3m", "accounts": ["a"], "repos": {"app": {"path": ".", "default": True}},
        "agent_control": {"enabled": True, "completion_verify": {"files_exist": ["work.txt"]}}, **manifest}))
    (root / "prompts").mkdir()
    front = {"verify": {"files_exist": ["work.txt"]}}
    (root / "prompts" / "01_work.prompt.md").write_text(f"---\n{yaml.safe_dump(front)}---\n{body}\n")
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "commit", "-qm", "packet"], cwd=root, check=True)
    return root


def run_attacked(tmp_path: Path, make_git_repo, isolation: str, agent: str) -> tuple[Path, dict[str, str]]:  # type: ignore[no-untyped-def]
    home = plant_canaries(tmp_path)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "AWP_PG_PASSWORD": SECRET, "AWP_TEST_AGENT_KEY": "own-key",
           "LANG": "C.UTF-8", **QUIET_CLI}
    server = ThreadingHTTPServer(("127.0.0.1", 0), Canary)
    body = targets(tmp_path, tmp_path / "p" / ".awp", server.server_address[1])
    with serving(server), attacking_api(body) as api:
        providers = tmp_path / "providers.yaml"
        providers.write_text(yaml.safe_dump(agent_provider(tmp_path, agent, api)))
        packet = attack_packet(tmp_path / "p", make_git_repo, {**MANIFESTS[agent], "isolation": isolation}, body)
        done = subprocess.run([sys.executable, "-c", "from awp_pipelines.cli import main; main()", "run",
                               str(packet), "--providers", str(providers), "--json"], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=300)
    # Without the sandbox the git_hook row lands in `.git`: the tamper check ends the Attempt (exit 1).
    assert done.returncode == (0 if isolation == "sandbox" else 1), done.stdout + done.stderr
    return packet, {**rows_of(packet, tmp_path, tmp_path / "remote.git"), "_out": done.stdout}


def metadata_of(packet: Path) -> dict:
    """The Attempt's materialization metadata, as the asset's page shows it."""
    from dagster import AssetKey

    from awp_pipelines.orchestration.ledger.instance import open_instance

    instance = open_instance(packet)
    try:
        [found] = instance.fetch_materializations(AssetKey(["attacked", "01_work"]), limit=1).records
        assert found.asset_materialization is not None
        return dict(found.asset_materialization.metadata)
    finally:
        instance.dispose()


@pytest.mark.parametrize("agent", AGENTS)
def test_every_row_is_denied_while_the_work_is_verified_committed_and_agent_control_works(
        tmp_path: Path, make_git_repo, agent: str) -> None:  # type: ignore[no-untyped-def]
    packet, rows = run_attacked(tmp_path, make_git_repo, "sandbox", agent)
    assert {r: rows[r] for r in ROWS} == dict.fromkeys(ROWS, "denied"), rows
    assert (rows["own_config"], rows["agent_control"]) == ("0", "0"), rows
    # Its own config folder is writable inside (a scoped copy), and what it wrote there is discarded.
    assert not (tmp_path / "accounts" / "a" / "own.txt").exists()
    assert not (packet / ".git" / "hooks" / "post-commit").exists()
    [outcome] = json.loads(rows["_out"])["prompts"]
    assert (outcome["result"], outcome["state"]) == ("completed", "completed")
    assert "the real work" in subprocess.run(["git", "show", "HEAD:work.txt"], cwd=packet, capture_output=True,
                                             text=True, check=True).stdout
    assert len(git_log(packet)) == 3  # README, the packet, the Attempt's commit
    [record] = stored_records(packet, outcome["attempt"].split(".")[0])
    assert record["control"]["outcome"] == "finish"
    isolation = record["isolation"]
    assert isolation["profile"] == {"isolation": "sandbox", "set_by": "packet"}
    assert isolation["sandbox"].startswith("bubblewrap ")
    modes = {g["path"]: g["mode"] for g in isolation["grants"]["paths"]}
    assert modes[str(packet)] == "rw" and modes[str(packet / ".awp")] == "hidden"
    assert modes[str(tmp_path / "accounts" / "a")] == "rw" and str(tmp_path / "accounts" / "b") not in modes
    assert "own-key" not in json.dumps(record)  # the only secret inside is its own, and it is redacted
    assert metadata_of(packet)["awp/isolation"].value.startswith("sandbox (packet), bubblewrap ")
    if agent == "claude":  # the provider's endpoint, and only it, on the record's hosts
        assert any(h.startswith("127.0.0.1:") for h in isolation["grants"]["hosts"])


@pytest.mark.parametrize("agent", AGENTS)
def test_every_row_gets_through_without_the_sandbox(tmp_path: Path, make_git_repo, agent: str) -> None:  # type: ignore[no-untyped-def]
    packet, rows = run_attacked(tmp_path, make_git_repo, "none", agent)
    assert {r: rows[r] for r in ROWS} == dict.fromkeys(ROWS, "LEAK"), rows
    [outcome] = json.loads(rows["_out"])["prompts"]
    [record] = stored_records(packet, outcome["attempt"].split(".")[0])
    # ...but AWP's git never runs the hook it wrote: the Attempt ends tree_tampered, naming it, nothing committed.
    assert record["result"] == "tree_tampered" and ".git/hooks/post-commit" in record["failure"]["message"]
    assert record["commits"] == []
    assert record["isolation"]["profile"] == {"isolation": "none", "set_by": "packet"}
    assert record["isolation"]["grants"] is None
