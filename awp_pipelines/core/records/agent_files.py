"""Where an Attempt's live files are, under the packet's state folder, and what they say while it runs. Pure.

The Attempt writes its event file (`events/<packet run>/<prompt>/<attempt>.jsonl`) and its agent's control
files (`control/<packet run>/<prompt>/<attempt>/`) at these paths; `awp watch` and `awp status` read them back
here. Activity is the files' own: the event file grows with every event the agent emits, however few of its
lines were forwarded to the run's log, so liveness never depends on the live feed's cap.
"""

from __future__ import annotations

from pathlib import Path


def events_file(state_root: Path, packet_run: str, prompt: str, attempt: str) -> Path:
    return state_root / "events" / packet_run / prompt / f"{attempt}.jsonl"


def control_folder(state_root: Path, packet_run: str, prompt: str, attempt: str) -> Path:
    return state_root / "control" / packet_run / prompt / attempt


def last_activity(state_root: Path, packet_run: str, prompt: str, attempt: str) -> float | None:
    """Epoch seconds of the Attempt's latest write: its event file or its agent's progress record."""
    paths = (events_file(state_root, packet_run, prompt, attempt),
             control_folder(state_root, packet_run, prompt, attempt) / "progress.json")
    times = [p.stat().st_mtime for p in paths if p.is_file()]
    return max(times) if times else None

