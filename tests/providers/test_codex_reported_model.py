"""Codex names no model in its JSON events; its own session file does (the real CLI: test_real_codex_model.py)."""

from __future__ import annotations

import json
from pathlib import Path

from awp_pipelines.core.packet.providers_config import ProviderSpec
from awp_pipelines.core.providers.codex import CodexAdapter

SPEC = ProviderSpec(kind="codex", credential_env="OPENAI_API_KEY", config_dir_env="CODEX_HOME")


def test_the_last_turn_context_of_the_threads_session_file_names_the_model(tmp_path: Path) -> None:
    day = tmp_path / "home" / "sessions" / "2026" / "12" / "01"
    day.mkdir(parents=True)
    lines = [{"type": "session_meta", "payload": {"model_provider": "awp"}},
             {"type": "turn_context", "payload": {"model": "gpt-5"}},
             {"type": "turn_context", "payload": {"model": "gpt-5-codex"}}]
    (day / "rollout-2026-12-01T00-00-00-thread-1.jsonl").write_text("\n".join(map(json.dumps, lines)) + "\n")
    (day / "rollout-2026-12-01T00-00-00-thread-2.jsonl").write_text(json.dumps(lines[1]) + "\n")
    adapter = CodexAdapter(SPEC)
    assert adapter.reported_model({"CODEX_HOME": str(tmp_path / "home")}, "thread-1") == "gpt-5-codex"
    assert adapter.reported_model({"CODEX_HOME": str(tmp_path / "home")}, "thread-9") is None
    assert adapter.reported_model({"HOME": str(tmp_path)}, "thread-1") is None  # ~/.codex holds none
