"""Helpers of test_attempt_cancel.py that test_interrupts.py uses too: here at tests/ root, where a test module in any
folder imports them by name."""

from __future__ import annotations

from pathlib import Path

import yaml

from awp_pipelines.core.engine.attempt_record import AttemptIdentity, AttemptTarget
from awp_pipelines.core.engine.attempts import AttemptSpec
from awp_pipelines.core.packet.packet import load_packet
from awp_pipelines.core.packet.providers_config import load_catalog
from awp_pipelines.core.planning.plan import PlanContext, build_plan


def one_prompt_attempt(tmp_path: Path, make_git_repo) -> tuple[AttemptSpec, Path]:
    """Attempt 1 of a one-prompt packet whose contract (done.txt) the agents here never meet; and its repo."""
    repo = make_git_repo(tmp_path / "p" / "workspace")
    (tmp_path / "p" / "packet.yaml").write_text(yaml.safe_dump({
        "name": "cancel", "provider": "simulated", "repos": {"app": {"path": "./workspace", "default": True}}}))
    (tmp_path / "p" / "prompts").mkdir()
    prompt = "---\nverify: {files_exist: [done.txt]}\n---\nWork.\n"
    (tmp_path / "p" / "prompts" / "01_work.prompt.md").write_text(prompt)
    packet = load_packet(tmp_path / "p")
    [plan] = build_plan(packet, PlanContext(catalog=load_catalog(None))).prompts
    identity = AttemptIdentity(attempt_id="pr-1.01.a1", agent_run="pr-1.01", number=1, packet="cancel",
                               packet_run="pr-1", prompt="01", mode="run")
    target = AttemptTarget(provider="simulated", provider_kind="simulated", model="m", reason="primary")
    return AttemptSpec(packet=packet, prompt=packet.prompt("01"), plan=plan, identity=identity, target=target), repo
