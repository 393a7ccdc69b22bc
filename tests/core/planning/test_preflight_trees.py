"""`awp run` refuses a work tree that is not there once, before any Attempt (preflight.refuse_missing_trees): not
four Attempts ending `interrupted`. Only the selected prompts' trees count; a remote repo is cloned by the run."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from awp_pipelines.core.packet.errors import PacketError
from awp_pipelines.core.packet.packet import load_packet
from awp_pipelines.core.packet.providers_config import BUILTIN
from awp_pipelines.core.planning.plan import PlanContext, build_plan
from awp_pipelines.core.planning.preflight import refuse_missing_trees


def _packet(root: Path, repos: object) -> Path:
    (root / "prompts").mkdir(parents=True)
    (root / "packet.yaml").write_text(yaml.safe_dump({"name": "trees", "provider": "simulated", "repos": repos},
                                                     sort_keys=False))
    for stem, targets in (("01_app", ["app"]), ("02_web", ["web"])):
        front = {"targets": targets, "verify": {"files_exist": ["x"]}}
        (root / "prompts" / f"{stem}.prompt.md").write_text(f"---\n{yaml.safe_dump(front)}---\nx\n")
    (root / "app" / ".git").mkdir(parents=True)
    return root


def _refuse(root: Path, *ids: str) -> None:
    packet = load_packet(root)
    plan = build_plan(packet, PlanContext(catalog=BUILTIN))
    refuse_missing_trees([p for p in plan.prompts if not ids or p.id in ids], packet)


@pytest.mark.parametrize("listed", [False, True])
def test_a_selected_prompts_missing_tree_is_refused_at_its_path_line(tmp_path: Path, listed: bool) -> None:
    repos: object = {"app": {"path": "./app", "default": True}, "web": {"path": "./web"}}
    if listed:
        repos = [{"name": "app", "path": "./app", "default": True}, {"name": "web", "path": "./web"}]
    root = _packet(tmp_path, repos)
    _refuse(root, "01")  # 02's tree is not needed by this run
    with pytest.raises(PacketError) as err:
        _refuse(root)
    line = next(n for n, text in enumerate((root / "packet.yaml").read_text().splitlines(), 1) if "./web" in text)
    assert (err.value.file, err.value.line) == (root / "packet.yaml", line)
    assert err.value.key == ("repos.1.path" if listed else "repos.web.path")
    assert err.value.message == f"repo 'web': no such work tree {root / 'web'}"
    (root / "web").mkdir()
    with pytest.raises(PacketError, match="is not in a git repository"):
        _refuse(root)
    (root / "web" / ".git").mkdir()
    _refuse(root)


def test_a_remote_repo_is_cloned_by_the_run_not_refused(tmp_path: Path) -> None:
    root = _packet(tmp_path, {"app": {"path": "./app", "default": True},
                              "web": {"remote": {"url": "https://forge.invalid/web.git"}}})
    _refuse(root)
