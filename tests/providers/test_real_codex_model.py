"""Codex names no model in its JSON events; its own session file does. The real Codex CLI against the local
fake Responses API: the outcome carries the model Codex ran, so `cli_confirmation` can check it."""

from __future__ import annotations

import os
from pathlib import Path

from fake_apis import fake_api
from provider_helpers import real_cli, sink

from awp_pipelines.core.packet.providers_config import AccountBinding, ProviderSpec
from awp_pipelines.core.providers.base import ProviderRequest
from awp_pipelines.core.providers.codex import CodexAdapter

KEY = "sk-proj-real-codex-model-key-0123456789abcdef"
SPEC = ProviderSpec(kind="codex", credential_env="OPENAI_API_KEY", config_dir_env="CODEX_HOME")


def test_real_codex_reports_the_model_it_ran_from_its_session_file(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    with fake_api("success") as server:
        account = AccountBinding(name="c", provider="codex", credential_env="AWP_CODEX_MODEL_KEY",
                                 config_dir=str(tmp_path / "codex-home"), base_url=server.url + "/v1")
        request = ProviderRequest(prompt_text="Say hello.", cwd=tmp_path / "work", timeout_ms=90_000, model="gpt-5",
                                  env={"PATH": os.environ["PATH"], "HOME": str(tmp_path), "AWP_CODEX_MODEL_KEY": KEY},
                                  account=account)
        adapter = CodexAdapter(SPEC.model_copy(update={"command": str(real_cli("codex"))}))
        outcome = adapter.run(request, sink(tmp_path, (KEY,)))
    assert outcome.ok and outcome.reported_model == "gpt-5", outcome
