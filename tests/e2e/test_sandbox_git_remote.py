"""A work tree whose remote is over the network (`git://` on this machine's loopback, standing for an https or
ssh host): the agent's own `git push` cannot reach it from the sandbox, while AWP, outside, clones the remote,
commits the Attempt's work and pushes it to the packet run's branch. With `isolation: none` the agent's push
gets through, so the test tests the sandbox, not the script."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from local_servers import git_daemon

from awp_pipelines.core.isolation.bwrap import unavailable

PUSHER = Path(__file__).resolve().parents[1] / "fixtures" / "agents" / "pusher.sh"

pytestmark = pytest.mark.skipif(unavailable() is not None, reason=f"no sandbox here: {unavailable()}")


def _git(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *map(str, args)], capture_output=True, text=True, check=False)


def _run(tmp_path: Path, make_git_repo,  # type: ignore[no-untyped-def]
         isolation: str) -> tuple[Path, str, set[tuple[str, str, int]]]:
    """The packet run's remote, its branch, and the connections the Attempt's egress refused."""
    seed = make_git_repo(tmp_path / "seed")
    remote = tmp_path / "remotes" / "app.git"
    assert _git("clone", "-q", "--bare", seed, remote).returncode == 0
    assert _git("-C", remote, "config", "uploadpack.allowFilter", "true").returncode == 0  # AWP's partial clone
    packet = tmp_path / "p"
    (packet / "prompts").mkdir(parents=True)
    (tmp_path / "providers.yaml").write_text(yaml.safe_dump(
        {"providers": {"agent": {"kind": "command", "command": str(PUSHER), "models": ["m"]}}}))
    (packet / "prompts" / "01_work.prompt.md").write_text(
        f"---\n{yaml.safe_dump({'verify': {'files_exist': ['work.txt', 'push.txt']}})}---\nDo the work.\n")
    with git_daemon(remote.parent) as url:
        (packet / "packet.yaml").write_text(yaml.safe_dump({
            "name": "pushed", "provider": "agent", "model": "m", "timeout": "2m", "isolation": isolation,
            "repos": {"app": {"remote": {"url": f"{url}app.git", "branch": "main"}, "default": True}}}))
        env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path / "home"), "LANG": "C.UTF-8",
               "AWP_WORK_ROOT": str(tmp_path / "work")}
        done = subprocess.run([sys.executable, "-c", "from awp_pipelines.cli import main; main()", "run",
                               str(packet), "--providers", str(tmp_path / "providers.yaml"), "--json"], env=env,
                              cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    [outcome] = json.loads(done.stdout)["prompts"]
    assert (outcome["result"], outcome["state"]) == ("completed", "completed")
    events = [json.loads(line) for file in (packet / ".awp" / "events").rglob("*.jsonl")
              for line in file.read_text().splitlines()]
    denied = {(e["method"], e["host"], e["port"]) for e in events if e["type"] == "network_denied"}
    return remote, f"refs/heads/awp/pushed/{outcome['attempt'].split('.')[0]}", denied


def test_the_agent_cannot_push_to_a_network_remote_while_awp_pushes_its_work(
        tmp_path: Path, make_git_repo) -> None:  # type: ignore[no-untyped-def]
    remote, branch, denied = _run(tmp_path, make_git_repo, "sandbox")
    assert _git("-C", remote, "rev-parse", "-q", "--verify", "refs/heads/stolen").returncode != 0
    # AWP's own commit reached the run's branch, holding the work and what the agent's push returned.
    assert _git("-C", remote, "show", f"{branch}:work.txt").stdout == "the real work\n"
    assert _git("-C", remote, "show", f"{branch}:push.txt").stdout != "push: 0\n"
    # A `command` agent without a base_url is granted no host: its fetch was refused, and is on the record.
    assert denied == {("CONNECT", "example.org", 443)}


def test_without_the_sandbox_the_agents_push_gets_through(tmp_path: Path, make_git_repo) -> None:  # type: ignore[no-untyped-def]
    remote, branch, denied = _run(tmp_path, make_git_repo, "none")
    assert _git("-C", remote, "rev-parse", "-q", "--verify", "refs/heads/stolen").returncode == 0
    assert _git("-C", remote, "show", f"{branch}:push.txt").stdout == "push: 0\n"
    assert denied == set()
