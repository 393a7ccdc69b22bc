"""`kill -9` of `awp run` does not reach its agent: the agent leads a session of its own (so that Ctrl-C goes
to `awp run`, which stops it in order). The orphan would go on writing into the tree while the rerun's
Attempt works there. The rerun's compute, holding the tree's lease, ends it first (orphans.py)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from reliability.crash import agent_packet, agent_pids, checkpoint_refs, event, kill_when, rerun_completes

from awp_pipelines.core.providers.process import group_alive


@pytest.mark.slow
def test_the_agent_of_a_killed_runner_is_ended_before_the_rerun_works_in_its_tree(
        tmp_path: Path, make_git_repo, reliability_row) -> None:
    started = time.monotonic()
    packet, providers, ledger = agent_packet(tmp_path, make_git_repo)
    # The runner's whole process group is killed: the agent's session is not in it.
    packet_run = kill_when(packet, event("message_streamed", ".01.a1", delta="wrote half.txt\n"), {},
                           "--providers", str(providers))
    [agent] = agent_pids(ledger)
    assert group_alive(agent)  # orphaned, still in the tree

    commits = rerun_completes(packet, providers, packet_run)
    assert not group_alive(agent)  # ended by the rerun, long before its own 60 s were up
    assert commits == {"01": 1, "02": 1}
    assert len(agent_pids(ledger)) == 2  # the orphan and the rerun's agent: no third
    assert checkpoint_refs(packet / "workspace")  # the orphan's half was saved, not committed by the rerun
    reliability_row("kill -9 leaves the agent running, then rerun", tries=1, survived=1, records_lost=0,
                    commits_doubled=sum(n - 1 for n in commits.values()), budget_overruns=0,
                    seconds=time.monotonic() - started, note="orphaned agent ended by the rerun before it worked")
