"""Work trees that travel: a repo named by a git remote, cloned by whichever "host" runs the Attempt.

Two hosts are two work roots (AWP_WORK_ROOT) over one instance; the remote is a real bare repository.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from tests.e2e_support import awp, git_log


def _git(*args: str | Path) -> str:
    return subprocess.run(["git", *map(str, args)], check=True, capture_output=True, text=True).stdout


@pytest.fixture
def bare_remote(tmp_path: Path, make_git_repo: Callable[[Path], Path]) -> Path:
    seed = make_git_repo(tmp_path / "seed")
    remote = tmp_path / "remote.git"
    _git("clone", "--quiet", "--bare", seed, remote)
    return remote


def _packet(root: Path, remote: Path) -> Path:
    (root / "prompts").mkdir(parents=True)
    (root / "packet.yaml").write_text(yaml.safe_dump({
        "name": "travel", "provider": "simulated",
        "repos": {"app": {"remote": {"url": str(remote), "branch": "main"}, "default": True}}}))
    # Attempt 1 writes half the work and misses the contract; the repair writes the rest.
    prompt = {"id": "01", "verify": {"files_exist": ["part1.txt", "done.txt"]},
              "simulate": {"attempts": [{"writes": [{"path": "part1.txt", "text": "one"}]},
                                        {"writes": [{"path": "done.txt", "text": "two"}]}]}}
    (root / "prompts" / "01_work.prompt.md").write_text(f"---\n{yaml.safe_dump(prompt)}---\n# Work\n")
    return root


def test_a_repair_on_another_host_continues_from_the_pushed_checkpoint_and_pushes_its_commit(
        tmp_path: Path, bare_remote: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    packet = _packet(tmp_path / "travel", bare_remote)
    monkeypatch.setenv("AWP_WORK_ROOT", str(tmp_path / "host-a"))
    first = awp("run", packet, "--no-recovery", "--json")
    assert first.exit_code == 1, first.output
    [outcome] = json.loads(first.stdout)["prompts"]
    agent_run = outcome["attempt"].rsplit(".a", 1)[0]
    packet_run = agent_run.split(".")[0]
    branch = f"refs/heads/awp/travel/{packet_run}"
    # The run's branch is pinned at the base, and the unfinished Attempt's work is on the remote.
    base = _git("-C", bare_remote, "rev-parse", "refs/heads/main").strip()
    assert _git("-C", bare_remote, "rev-parse", branch).strip() == base
    checkpoint = f"refs/awp/checkpoints/{agent_run}/{outcome['attempt']}"
    assert _git("-C", bare_remote, "show", f"{checkpoint}:part1.txt") == "one"
    assert (tmp_path / "host-a" / "travel" / "app" / ".git").is_dir()

    monkeypatch.setenv("AWP_WORK_ROOT", str(tmp_path / "host-b"))
    second = awp("repair", packet, "01", "--packet-run", packet_run)
    assert second.exit_code == 0, second.output
    host_b = tmp_path / "host-b" / "travel" / "app"
    assert _git("-C", host_b, "rev-parse", "--abbrev-ref", "HEAD").strip() == f"awp/travel/{packet_run}"
    # One commit on the run's branch, holding the first Attempt's work too, its trailers naming the repair.
    assert _git("-C", bare_remote, "rev-list", "--count", f"{base}..{branch}").strip() == "1"
    assert _git("-C", bare_remote, "show", f"{branch}:part1.txt") == "one"
    assert _git("-C", bare_remote, "show", f"{branch}:done.txt") == "two"
    message = _git("-C", bare_remote, "log", "-1", "--format=%B", branch)
    assert f"AWP-Attempt: {agent_run}.a2" in message and "AWP-Mode: repair" in message
    assert git_log(host_b)[0].strip() == message.strip()
    assert _git("-C", bare_remote, "rev-parse", "refs/heads/main").strip() == base  # the base is never pushed to
