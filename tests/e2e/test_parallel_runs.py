"""A DAG packet in parallel under `awp run`: independent prompts on disjoint work trees overlap in time, prompts
on one work tree never do. Proved from the step start and end times Dagster stored, not from a clock here."""

from __future__ import annotations

import re
from pathlib import Path

from dag_packets import write_dag_packet
from dagster import DagsterInstance
from e2e_support import awp, runs_of_packet

from awp_pipelines.core.packet.packet import load_packet
from awp_pipelines.core.packet.providers_config import BUILTIN
from awp_pipelines.orchestration.compile.binding import PacketBinding
from awp_pipelines.orchestration.driver.parallel import can_overlap


def _step_spans(instance_dir: Path) -> tuple[int, dict[str, tuple[float, float]]]:
    """The runs of the packet, and each prompt's (start, end) from its stored step stats."""
    instance = DagsterInstance.from_config(str(instance_dir))
    try:
        runs = runs_of_packet(instance, "dag")
        spans = {}
        for run in runs:
            for stat in instance.get_run_step_stats(run.run_id):
                assert stat.start_time is not None and stat.end_time is not None
                spans[stat.step_key.split("__")[-1].split("_")[0]] = (stat.start_time, stat.end_time)
        return len(runs), spans
    finally:
        instance.dispose()


def _overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def test_independent_prompts_on_disjoint_repos_overlap_and_prompts_on_one_repo_never_do(tmp_path: Path) -> None:
    # 01 and 03 edit repo a, 02 edits repo b; none depends on another. Each agent takes 3 s.
    packet = write_dag_packet(tmp_path / "dag", {"01": "a", "02": "b", "03": "a"}, delay_ms=3000)
    instance_dir = tmp_path / "instance"
    result = awp("run", packet, "--parallel", "4", "--instance", instance_dir)
    assert result.exit_code == 0, result.output
    assert "3/3 prompts done" in result.output
    # Each step's Attempt line reached the terminal, though the steps ran in other processes.
    assert all(re.search(rf"\[\d/3 done\] {pid} Prompt {pid}: Attempt", result.output) for pid in ("01", "02", "03"))
    runs, spans = _step_spans(instance_dir)
    assert runs == 1  # the selection is one run, as "Materialize all" launches it
    assert set(spans) == {"01", "02", "03"}
    assert not _overlap(spans["01"], spans["03"])  # one work tree: one agent at a time
    # Repo b's prompt ran while one of repo a's did.
    assert _overlap(spans["02"], spans["01"]) or _overlap(spans["02"], spans["03"])


def test_parallel_one_runs_the_same_packet_one_prompt_at_a_time(tmp_path: Path) -> None:
    packet = write_dag_packet(tmp_path / "dag", {"01": "a", "02": "b"}, delay_ms=1000)
    instance_dir = tmp_path / "instance"
    result = awp("run", packet, "--parallel", "1", "--instance", instance_dir)
    assert result.exit_code == 0, result.output
    _, spans = _step_spans(instance_dir)
    assert not _overlap(spans["01"], spans["02"])


def test_only_a_selection_with_independent_prompts_on_disjoint_trees_can_overlap(tmp_path: Path) -> None:
    packet = PacketBinding.of(load_packet(write_dag_packet(tmp_path / "dag", {"01": "a", "02": "b", "03": "a",
                                                                              "04": "c"}, depends_on={"04": ["02"]})),
                              BUILTIN)
    assert can_overlap(packet, ["01", "02"])
    assert not can_overlap(packet, ["01", "03"])  # one work tree
    assert not can_overlap(packet, ["02", "04"])  # 04 waits for 02
    assert not can_overlap(packet, ["01"])
