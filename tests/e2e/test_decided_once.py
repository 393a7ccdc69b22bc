"""Decided once (issue 19 item 3): each Attempt's compute reads its packet run's history once to decide (and
once more after it, for the root run's state), follows the launch its launcher decided as the run's config,
and `awp run` resolves its plan once."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from awp_pipelines import api
from awp_pipelines.core.engine.progress import AttemptStarted, LaunchDecided, ProgressEvent
from awp_pipelines.core.planning import plan
from awp_pipelines.orchestration import attempt_compute, history, packet_run_tag


def test_each_attempt_reads_history_once_to_decide_and_follows_the_launchers_decision(
        demo_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reads: Counter[str] = Counter()
    plans = Counter[str]()

    def counted(module: object, name: str, real):  # type: ignore[no-untyped-def]
        def wrapper(*args, **kwargs):  # type: ignore[no-untyped-def]
            reads[module.__name__.rsplit(".", 1)[-1]] += 1  # type: ignore[attr-defined]
            return real(*args, **kwargs)
        monkeypatch.setattr(module, name, wrapper)

    for module in (attempt_compute, packet_run_tag):
        counted(module, "packet_run_history", history.packet_run_history)
    real_build = plan.build_plan

    def build(*args, **kwargs):  # type: ignore[no-untyped-def]
        plans["build_plan"] += 1
        return real_build(*args, **kwargs)

    monkeypatch.setattr(plan, "build_plan", build)
    for where in ("awp_pipelines.api", "awp_pipelines.orchestration.binding"):
        monkeypatch.setattr(f"{where}.build_plan", build)

    events: list[ProgressEvent] = []
    result = api.run(demo_copy, on_progress=events.append)
    assert result.ok
    started = [e for e in events if isinstance(e, AttemptStarted)]
    assert len(started) == 5  # 01, 02, 03, then a repair of 02 and a retry of 03
    # One read to decide each Attempt, one after it for the packet run's state on the root run.
    assert reads == {"attempt_compute": 5, "packet_run_tag": 5}, reads
    assert plans["build_plan"] == 1, plans  # `awp run` resolves the packet's plan once
    # The compute takes the launcher's launch as it was decided: the same reason, not asked again.
    decided = {(e.prompt, e.number): e.reason for e in events if isinstance(e, LaunchDecided)}
    for event in started:
        number = int(event.attempt.rsplit(".a", 1)[1])
        if (event.prompt, number) in decided:
            assert event.reason == decided[(event.prompt, number)]
