"""The compat packets' own contracts, run against the files their simulated sessions write."""

from __future__ import annotations

from pathlib import Path

import pytest
from verify_helpers import COMPAT, Workspace, front_matter

from awp_pipelines.verifiers import VerifyContract, run_contract

SIMULATED = [
    packet
    for packet in ("authoring_packet", "simulated_recovery_packet")
    if (COMPAT / packet / "prompts").is_dir()
]


def _apply(ws: Workspace, step: dict) -> None:
    for write in step.get("writes") or []:
        path = ws.repos[write.get("repo", "app")] / write["path"]
        mode = "a" if write.get("append") else "w"
        with path.open(mode) as handle:
            handle.write(write["text"])


@pytest.mark.skipif(not SIMULATED, reason=f"compat packets not found at {COMPAT}")
@pytest.mark.parametrize("packet", SIMULATED)
def test_simulated_sessions_satisfy_their_contracts_prompt_after_prompt(ws: Workspace, packet: str) -> None:
    for prompt in sorted((COMPAT / packet / "prompts").glob("*.prompt.md")):
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
