"""A selection against a packet run: upstream prompts hold, --remaining reads the packet run, and an empty or
stuck selection says why and what to run instead (selection.py; pure over AgentRun states)."""

from __future__ import annotations

from pathlib import Path

import yaml

from awp_pipelines.core.decisions.agent_run import AgentRunStatus
from awp_pipelines.core.packet.packet import Packet, load_packet
from awp_pipelines.core.planning.selection import (
    ended_explanation,
    nothing_selected,
    remaining,
    selection_from_flags,
    unmet_upstream,
)

DONE = AgentRunStatus("completed", "attempt 1 met the contract")
FAILED = AgentRunStatus("failed", "contract unmet after 0 repair(s)")


def _packet(root: Path) -> Packet:
    root.mkdir(parents=True)
    (root / "packet.yaml").write_text(yaml.safe_dump({"name": "sel", "provider": "simulated",
                                                      "repos": {"app": {"path": "./app", "default": True}}}))
    (root / "prompts").mkdir()
    for stem, phase in (("01_a", 1), ("02_b", 1), ("03_c", 2)):
        front = {"phase": phase, "verify": {"files_exist": [f"{stem}.txt"]}}
        (root / "prompts" / f"{stem}.prompt.md").write_text(f"---\n{yaml.safe_dump(front)}---\nWork.\n")
    return load_packet(root)


def test_a_prompt_needs_its_upstream_chosen_too_or_completed_in_the_packet_run(tmp_path: Path) -> None:
    packet = _packet(tmp_path / "p")
    assert unmet_upstream(packet, ["02", "03"], {}) == {"02": ["01"]}
    assert unmet_upstream(packet, ["01", "02", "03"], {}) == {}
    assert unmet_upstream(packet, ["02"], {"01": DONE}) == {}
    assert unmet_upstream(packet, ["02"], {"01": FAILED}) == {"02": ["01"]}


def test_remaining_is_what_the_packet_run_has_not_done_and_nothing_left_says_so(tmp_path: Path) -> None:
    packet = _packet(tmp_path / "p")
    assert remaining(packet, {"01": DONE, "02": FAILED}) == {"02", "03"}
    every = {"01": DONE, "02": DONE, "03": DONE}
    selection = selection_from_flags(remaining=True, completed=set(every) - remaining(packet, every))
    assert selection.apply(packet) == []
    said = nothing_selected(packet, selection, "pr-1", every)
    assert said.message == "nothing remains in packet run pr-1: every prompt of sel is done there"
    assert "starts a new packet run" in (said.hint or "")


def test_an_empty_selection_names_what_it_matched_against(tmp_path: Path) -> None:
    packet = _packet(tmp_path / "p")
    said = nothing_selected(packet, selection_from_flags(phase="9"), None, {})
    assert said.message == "no prompt of sel matches --phase 9"
    assert said.hint == "prompts: 01, 02, 03; phases: 1, 2"


def test_a_packet_with_no_prompts_says_so_and_how_to_write_one(tmp_path: Path) -> None:
    """Not `no prompt of sel matches  (prompts: )`: an empty match list and a double space."""
    packet = _packet(tmp_path / "p")
    for file in (tmp_path / "p" / "prompts").iterdir():
        file.unlink()
    said = nothing_selected(load_packet(tmp_path / "p"), selection_from_flags(), None, {})
    assert said.message == "packet sel has no prompts: no NN_slug.prompt.md file in its prompt folder"
    assert (said.file, said.key, said.hint) == (packet.prompt_dir, "prompt_dir",
                                                f"`awp prompt new {packet.root} SLUG` writes one")


def test_a_stuck_packet_run_names_what_holds_it_and_what_to_run_instead(tmp_path: Path) -> None:
    packet = _packet(tmp_path / "p")
    held = AgentRunStatus("planned", "held: upstream 01 failed", held_by=("01",))
    statuses = {"01": FAILED, "02": held, "03": AgentRunStatus("planned", "held: upstream 02 planned",
                                                               held_by=("02",))}
    said = ended_explanation(["01", "02", "03"], statuses, "pr-1", packet)
    assert said is not None and said.startswith("nothing can run in packet run pr-1: 01 failed — contract unmet")
    assert "02 planned — held: upstream 01 failed" in said and "awp repair" in said and " 01 --packet-run pr-1" in said
    retry = AgentRunStatus("interrupted", "attempt 1 was interrupted; resumable: retry 1/3")
    assert ended_explanation(["01", "02"], {"01": retry, "02": held}, "pr-1", packet) is None
