"""The Prompt Runner-format packets' own contracts, run against the files their simulated sessions write."""

from __future__ import annotations

from pathlib import Path

import pytest
from packet_sources import packet_sources
from verify_helpers import Workspace, front_matter

from awp_pipelines.core.verifiers import VerifyContract, run_contract

# The packets whose prompts carry `simulate:` sessions, from every source.
SIMULATED = [pytest.param(source.root / packet, id=f"{source.name}-{packet}") for source in packet_sources()
             for packet in ("authoring_packet", "simulated_recovery_packet")]


def _apply(ws: Workspace, step: dict) -> None:
    for write in step.get("writes") or []:
        path = ws.repos[write.get("repo", "app")] / write["path"]
        mode = "a" if write.get("append") else "w"
        with path.open(mode) as handle:
            handle.write(write["text"])


@pytest.mark.parametrize("packet", SIMULATED)
def test_simulated_sessions_satisfy_their_contracts_prompt_after_prompt(ws: Workspace, packet: Path) -> None:
    prompts = sorted((packet / "prompts").glob("*.prompt.md"))
    assert prompts, f"no prompts under {packet}"
    for prompt in prompts:
        meta = front_matter(prompt)
        contract = VerifyContract.model_validate(meta["verify"])
        ctx = ws.ctx(prompt_id=str(meta["id"]))
        before = run_contract(contract, ctx)
        assert not before.passed, f"{prompt.name} passes before its session ran"
        simulate = meta["simulate"]
        for step in [*simulate["attempts"], simulate.get("resume") or {}]:
            _apply(ws, step)
        after = run_contract(contract, ctx)
        assert after.passed, f"{prompt.name}:\n{after.unmet_text()}"
        ws.write("stray.txt")
        assert [f.kind for f in run_contract(contract, ctx).failures] == ["changed_paths_only"]
        Path(ws.repos["app"] / "stray.txt").unlink()
        ws.git("app", "add", "-A")
        ws.git("app", "commit", "-qm", f"prompt {meta['id']}")
