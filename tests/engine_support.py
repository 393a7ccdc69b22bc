"""Helpers of test_engine.py that test_attempt_diffs.py uses too: here at tests/ root, where a test module in any
folder imports them by name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from awp_pipelines.core.engine.attempt_record import AttemptIdentity, AttemptRecord, AttemptTarget
from awp_pipelines.core.engine.attempts import AttemptSpec, execute_attempt
from awp_pipelines.core.packet.packet import load_packet
from awp_pipelines.core.packet.providers_config import load_catalog
from awp_pipelines.core.planning.plan import PlanContext, build_plan
from awp_pipelines.core.providers.simulated import SimulatedProvider
from awp_pipelines.core.records.events import EventSink

CONTRACT = {"files_exist": ["done.txt"], "contains": [{"path": "done.txt", "text": "done"}]}
WRITES_DONE = {"messages": ["writing it"], "writes": [{"path": "done.txt", "text": "done\n"}]}


def _attempt(tmp_path: Path, make_git_repo: Any, step: dict[str, Any], mode: str = "run",
             number: int = 1) -> tuple[AttemptRecord, Path]:
    """One Attempt of a one-prompt packet whose simulated agent plays `step`, on a fresh repo."""
    root = tmp_path / "p"
    repo = make_git_repo(root / "workspace")
    (root / "packet.yaml").write_text(yaml.safe_dump({
        "name": "engine", "provider": "simulated", "repos": {"app": {"path": "./workspace", "default": True}}}))
    (root / "prompts").mkdir()
    front = {"commit": "feat: write done.txt", "verify": CONTRACT,
             "simulate": {"attempts": [step] * number}}
    (root / "prompts" / "01_done.prompt.md").write_text(f"---\n{yaml.safe_dump(front)}---\nWrite done.txt.\n")
    packet = load_packet(root)
    [plan] = build_plan(packet, PlanContext(catalog=load_catalog(None))).prompts
    prompt = packet.prompt("01")
    identity = AttemptIdentity(attempt_id=f"pr-1.01.a{number}", agent_run="pr-1.01", number=number,
                               packet="engine", packet_run="pr-1", prompt="01", mode=mode)
    target = AttemptTarget(provider="simulated", provider_kind="simulated", model="sim", reason="primary")
    spec = AttemptSpec(packet=packet, prompt=prompt, plan=plan, identity=identity, target=target,
                       simulate=prompt.front.simulate)
    sink = EventSink(tmp_path / "events.jsonl", identity.attempt_id)
    return execute_attempt(spec, SimulatedProvider(), sink), repo
