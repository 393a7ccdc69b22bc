"""orphans.py: an agent's marked environment finds it again after its runner died, and only for its packet
and its work trees; ending it ends its whole process group."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from awp_pipelines.core.engine.orphans import end_orphans, marked, marker
from awp_pipelines.core.providers.process import group_alive

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc")


def _agent(packet: Path, trees: list[Path]) -> subprocess.Popen[bytes]:
    """An agent as the adapters start one: its own session, the mark in its environment, and a child."""
    env = {**os.environ, **marker(packet, trees, "p.01.r1.a1")}
    return subprocess.Popen(["sh", "-c", "sleep 60 & sleep 60"], env=env, start_new_session=True)


def test_a_marked_agent_is_found_by_its_packet_and_tree_only_and_ended_with_its_group(tmp_path: Path) -> None:
    packet, tree, other = tmp_path / "packet", tmp_path / "tree", tmp_path / "other"
    for folder in (packet, tree, other):
        folder.mkdir()
    agent = _agent(packet, [tree, other])
    try:
        found = []
        for _ in range(100):  # the shell's child may take a moment to exist
            found = list(marked(packet, [tree]))
            if len(found) >= 2:
                break
            time.sleep(0.05)
        assert {o.group for o in found} == {agent.pid} and {o.attempt for o in found} == {"p.01.r1.a1"}
        assert len(found) >= 2  # the shell and its sleeping child: everything it spawned carries the mark
        assert not list(marked(packet, [tmp_path / "elsewhere"]))  # another tree
        assert not list(marked(tmp_path / "another-packet", [tree]))  # another packet's agent is not ours
        assert end_orphans(packet, [other])
        assert not group_alive(agent.pid)
    finally:
        if agent.poll() is None:
            os.killpg(agent.pid, 9)
        agent.wait(timeout=10)


def test_only_a_marked_process_has_its_stat_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every Attempt scans: the other processes (~130 on a shared machine) cost one read each, their environment's
    bytes searched for the mark, not a parse and a stat read as well."""
    from awp_pipelines.core.engine import orphans

    packet, tree = tmp_path / "packet", tmp_path / "tree"
    for folder in (packet, tree):
        folder.mkdir()
    agent = _agent(packet, [tree])
    stats: list[int] = []
    real = orphans.process_stat
    monkeypatch.setattr(orphans, "process_stat", lambda pid: stats.append(pid) or real(pid))
    try:
        found = []
        for _ in range(100):
            stats.clear()
            found = list(marked(packet, [tree]))
            if len(found) >= 2:
                break
            time.sleep(0.05)
        assert {o.group for o in found} == {agent.pid}
        assert sorted(stats) == sorted(o.pid for o in found)  # the shell and its child, no other process
    finally:
        os.killpg(agent.pid, 9)
        agent.wait(timeout=10)
