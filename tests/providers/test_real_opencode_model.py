"""OpenCode names no model in its JSON lines; its own database does. The real OpenCode CLI against the local
fake API: the outcome carries `provider/model` as OpenCode ran it, so `cli_confirmation` can check it."""

from __future__ import annotations

from pathlib import Path

import pytest
from fake_apis import fake_api
from test_real_opencode import _run, opencode  # noqa: F401  (the fixture)

from awp_pipelines.core.engine.confirmation import model_confirms
from awp_pipelines.core.packet.providers_config import ProviderSpec
from awp_pipelines.core.providers.opencode import OpenCodeAdapter


def test_real_opencode_reports_the_model_it_ran_from_its_database(
        tmp_path: Path, opencode: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    with fake_api("success") as server:
        outcome, s = _run(tmp_path, opencode, server.url, monkeypatch, idle_ms=90_000)
    assert outcome.ok, (outcome.failure, s.events()[-4:])
    assert outcome.reported_model == "anthropic/claude-haiku-4-5"
    assert model_confirms("anthropic/claude-haiku-4-5", outcome.reported_model)
    # Another session of the same database names nothing.
    adapter = OpenCodeAdapter(ProviderSpec(kind="opencode"))
    assert adapter.reported_model({"HOME": str(tmp_path)}, "ses_none") is None
    assert adapter.reported_model({"HOME": str(tmp_path / "nowhere")}, outcome.session_id) is None
