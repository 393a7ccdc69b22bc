"""The Amp adapter, below its real CLI (test_real_amp.py): its argv (the mode is its model; an effort picks one where
no mode is named), the resume of its own thread, and a word that is no mode, refused before it starts."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from provider_helpers import KIND_SPECS, request, sink

from awp_pipelines.core.providers.amp import AmpAdapter

ADAPTER = AmpAdapter(KIND_SPECS["amp"], name="amp")


@pytest.mark.parametrize(("model", "effort", "mode"), [("high", None, "high"), (None, "xhigh", "ultra"),
                                                      (None, None, None)])
def test_its_mode_is_its_model_else_the_effort_picks_one(tmp_path: Path, model: str | None, effort: str | None,
                                                         mode: str | None) -> None:
    argv = ADAPTER.argv(replace(request(tmp_path, "Do it.", "k" * 12), model=model, effort=effort))
    assert argv[:4] == [ADAPTER.command, "-x", "Do it.", "--stream-json"]
    assert (argv[argv.index("-m") + 1] if "-m" in argv else None) == mode


def test_a_resume_continues_its_own_thread(tmp_path: Path) -> None:
    req = replace(request(tmp_path, "Continue", "k" * 12), session_id="T-0193-abc", mode="resume")
    assert ADAPTER.argv(req, resume=True)[:6] == [ADAPTER.command, "threads", "continue", "T-0193-abc", "-x",
                                                  "Continue"]


def test_a_model_that_is_no_mode_is_refused_before_it_starts(tmp_path: Path) -> None:
    marker = tmp_path / "work" / "started.txt"
    outcome = ADAPTER.run(replace(request(tmp_path, f"awp-fake-write: {marker} = yes", "k" * 12), model="gpt-5"),
                          sink(tmp_path))
    failure = outcome.failure
    assert failure is not None and (failure.failure_class, failure.retryable, failure.provider_code) == (
        "provider_config_claim", False, "amp_mode"), failure
    assert "not 'gpt-5'" in failure.message and not marker.exists()
