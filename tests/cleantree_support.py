"""Helpers of test_cleantree.py that test_untrusted_work.py uses too: here at tests/ root, where a test module in any
folder imports them by name."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import yaml

from awp_pipelines.core.engine.attempt_record import AttemptIdentity, AttemptRecord, AttemptTarget
from awp_pipelines.core.engine.attempts import AttemptSpec, execute_attempt
from awp_pipelines.core.packet.model.simulate import SimulateSpec
from awp_pipelines.core.packet.packet import Packet, load_packet
from awp_pipelines.core.packet.providers_config import load_catalog
from awp_pipelines.core.planning.plan import PlanContext, build_plan
from awp_pipelines.core.providers.simulated import SimulatedProvider
from awp_pipelines.core.records.events import EventSink


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


def _packet(tmp_path: Path, make_git_repo: Any, dirty_tree: str | None = None) -> tuple[Packet, Path]:
    """Two independent prompts on one repo: 01 writes a.txt, 02 writes b.txt."""
    root = tmp_path / "p"
    repo = make_git_repo(root / "workspace")
    manifest: dict[str, Any] = {"name": "tidy", "provider": "simulated",
                                "repos": {"app": {"path": "./workspace", "default": True}}}
    if dirty_tree:
        manifest["dirty_tree"] = dirty_tree
    (root / "packet.yaml").write_text(yaml.safe_dump(manifest))
    (root / "prompts").mkdir()
    for pid, name in (("01", "a.txt"), ("02", "b.txt")):
        front = {"id": pid, "commit": f"feat: {name}", "verify": {"files_exist": [name]},
                 "simulate": {"attempts": [{"writes": [{"path": name, "text": f"{name}\n"}]}]}}
        prompt_file = root / "prompts" / f"{pid}_{name[0]}.prompt.md"
        prompt_file.write_text(f"---\n{yaml.safe_dump(front)}---\nWrite {name}.\n")
    return load_packet(root), repo


def _attempt(packet: Packet, pid: str, tmp_path: Path, adapter: Any = None, commit: bool = True, number: int = 1,
             restore: dict[str, str] | None = None, simulate: dict[str, Any] | None = None) -> AttemptRecord:
    plan = next(p for p in build_plan(packet, PlanContext(catalog=load_catalog(None))).prompts if p.id == pid)
    prompt = packet.prompt(pid)
    identity = AttemptIdentity(attempt_id=f"pr-1.{pid}.a{number}", agent_run=f"pr-1.{pid}", number=number,
                               packet=packet.name, packet_run="pr-1", prompt=pid,
                               mode="run" if number == 1 else "retry")
    target = AttemptTarget(provider="simulated", provider_kind="simulated", model="sim", reason="primary")
    steps = SimulateSpec.model_validate({"attempts": [simulate] * number}) if simulate else prompt.front.simulate
    spec = AttemptSpec(packet=packet, prompt=prompt, plan=plan, identity=identity, target=target,
                       simulate=steps, commit=commit, restore=restore)
    sink = EventSink(tmp_path / f"events-{pid}.a{number}.jsonl", identity.attempt_id)
    return execute_attempt(spec, adapter or SimulatedProvider(), sink)
