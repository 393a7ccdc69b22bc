"""The code location: packets under assets/ compile into asset groups, checks and jobs Dagster accepts."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from dagster import AssetKey
from dagster.components.testing import create_defs_folder_sandbox

from awp_pipelines.components import PacketComponent
from awp_pipelines.definitions import REPO_PACKETS_DIR, build_definitions, discover_packets
from awp_pipelines.verifiers.items import contract_items

REPO_ROOT = Path(__file__).resolve().parent.parent

# A snapshot of the demo packet's graph: an accidental reshape shows up here in review.
DEMO_ASSETS = {"demo/01": [], "demo/02": ["demo/01"], "demo/03": ["demo/01"]}
DEMO_CHECKS = {
    "demo/01:changed_paths_only", "demo/01:contains_1_greeting_md", "demo/01:files_exist_1_greeting_md",
    "demo/02:changed_paths_only", "demo/02:contains_1_changelog_md", "demo/02:contains_2_changelog_md",
    "demo/02:files_exist_1_changelog_md", "demo/03:changed_paths_only", "demo/03:contains_1_status_md",
    "demo/03:doc_1_status_md", "demo/03:files_exist_1_status_md",
    *(f"demo/0{n}:commands_1_git_diff_quiet_head_readme_md" for n in (1, 2, 3)),
}


def test_dagster_validates_the_workspace(tmp_path: Path) -> None:
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path)}
    result = subprocess.run([str(Path(sys.executable).parent / "dagster"), "definitions", "validate", "-w",
                             "workspace.yaml"], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Validation successful for code location awp_pipelines" in result.stdout + result.stderr


def test_demo_packet_graph_matches_its_snapshot() -> None:
    graph = build_definitions(REPO_ROOT).resolve_asset_graph()
    demo = {k.to_user_string(): sorted(p.to_user_string() for p in graph.get(k).parent_keys)
            for k in graph.get_all_asset_keys() if k.path[0] == "demo"}
    assert demo == DEMO_ASSETS
    assert {c.to_user_string() for c in graph.asset_check_keys if c.asset_key.path[0] == "demo"} == DEMO_CHECKS


def test_every_packet_is_one_group_and_one_job_with_one_blocking_check_per_verifier_item() -> None:
    defs = build_definitions(REPO_ROOT)
    graph = defs.resolve_asset_graph()
    packets = discover_packets(REPO_ROOT / REPO_PACKETS_DIR)
    assert packets, "assets/ holds at least the demo packet"
    for packet in packets:
        group = packet.name.replace("-", "_")
        keys = {AssetKey([group, p.id]) for p in packet.prompts}
        assert {k for k in graph.get_all_asset_keys() if graph.get(k).group_name == group} == keys
        job = defs.resolve_job_def(f"packet__{group}")
        assert job.asset_layer.executable_asset_keys == keys
        for prompt in packet.prompts:
            expected = {i.check_name for i in contract_items(prompt.front.verify)} if prompt.front.verify else set()
            checks = {c for c in graph.asset_check_keys if c.asset_key == AssetKey([group, prompt.id])}
            assert {c.name for c in checks} == expected
            assert all(graph.get_check_spec(c).blocking for c in checks)


def test_compat_packets_compile_to_groups_with_their_contract_items(compat_root: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(compat_root, project / "assets")
    defs = build_definitions(project)
    graph = defs.resolve_asset_graph()
    groups = {graph.get(k).group_name for k in graph.get_all_asset_keys()}
    assert groups == {"authoring_packet", "claude_packet", "multi_repo_packet", "simulated_recovery_packet",
                      "single_repo_packet"}
    recovery_checks = {c for c in graph.asset_check_keys if c.asset_key.path[0] == "simulated_recovery_packet"}
    assert len(recovery_checks) == 27  # nine prompts × (files_exist, contains or second file, changed paths)


def test_packet_component_declares_a_packet_in_a_dg_project(compat_root: Path, tmp_path: Path) -> None:
    packet = tmp_path / "authoring_packet"
    shutil.copytree(compat_root / "authoring_packet", packet)
    with create_defs_folder_sandbox() as sandbox:
        defs_path = sandbox.scaffold_component(
            component_cls=PacketComponent,
            defs_yaml_contents={"type": "awp_pipelines.components.PacketComponent",
                                "attributes": {"path": str(packet)}})
        with sandbox.load_component_and_build_defs(defs_path=defs_path) as (component, defs):
            assert isinstance(component, PacketComponent)
            graph = defs.resolve_asset_graph()
            assert graph.get_all_asset_keys() == {AssetKey(["authoring_packet", "01"]),
                                                  AssetKey(["authoring_packet", "02"])}
            assert len(graph.asset_check_keys) == 8
            assert defs.resolve_job_def("packet__authoring_packet") is not None


def test_pure_core_imports_nothing_from_dagster() -> None:
    pure = ["awp_pipelines.packet", "awp_pipelines.plan", "awp_pipelines.lint", "awp_pipelines.attempts",
            "awp_pipelines.verifiers.engine", "awp_pipelines.providers.simulated", "awp_pipelines.tags",
            "awp_pipelines.committer", "awp_pipelines.events", "awp_pipelines.authoring"]
    code = ("import importlib, sys\n"
            f"for m in {pure!r}: importlib.import_module(m)\n"
            "print(sorted(n for n in sys.modules if n == 'dagster' or n.startswith('dagster.')))")
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
