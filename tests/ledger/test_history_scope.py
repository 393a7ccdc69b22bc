"""A packet run's scope (history.py): the prompts it was asked to run. Its runs' selections say it, and so does
an Attempt it holds: after a database lost its last commits, a run that selected a prompt may be gone while its
Attempt came back adopted from its commit (adoption.py); `awp status` and `awp watch` then count that prompt."""

from __future__ import annotations

from pathlib import Path

from dagster import DagsterRun
from ledger.support import a_binding, a_record

from awp_pipelines.orchestration.ledger.history import AgentRunHistory, PacketRunHistory


def test_a_prompt_with_an_attempt_is_in_scope_though_no_surviving_run_selected_it(tmp_path: Path,
                                                                                  make_git_repo) -> None:
    binding = a_binding(tmp_path / "p", make_git_repo, {"01_a": {}, "02_b": {}, "03_c": {}})
    run = DagsterRun(job_name="mem__job", run_id="run-01", asset_selection=frozenset({binding.key("01")}))
    alone = PacketRunHistory("pr", [run], {}, {})
    assert alone.scope(binding.packet, binding.keys) == ["01"]
    adopted = AgentRunHistory(records=[a_record("pr", 2, "completed", "run-lost", "02")])
    history = PacketRunHistory("pr", [run], {"02": adopted, "03": AgentRunHistory()}, {})
    assert history.scope(binding.packet, binding.keys) == ["01", "02"]  # 03: no Attempt, no run of it
