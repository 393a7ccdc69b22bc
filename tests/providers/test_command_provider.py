"""The `command` kind: any executable, prompt on stdin, workspace as cwd."""

from __future__ import annotations

import sys
from pathlib import Path

from provider_helpers import request, sink

from awp_pipelines.core.packet.providers_config import ProviderSpec
from awp_pipelines.core.providers.registry import adapter_for


def _script(tmp: Path, body: str) -> str:
    path = tmp / "agent.py"
    path.write_text(body)
    return f"{sys.executable} {path}"


def test_prompt_on_stdin_runs_in_the_workspace(tmp_path: Path) -> None:
    command = _script(tmp_path, "import sys, os\ntext = sys.stdin.read()\n"
                                "open('got.txt', 'w').write(text)\nprint('wrote', os.getcwd())\n")
    adapter = adapter_for(ProviderSpec(kind="command", command=command))
    s = sink(tmp_path)
    outcome = adapter.run(request(tmp_path, "the prompt", "k" * 12), s)
    assert outcome.ok
    assert (tmp_path / "work" / "got.txt").read_text() == "the prompt"
    assert any(e["type"] == "message_streamed" and "wrote" in e["delta"] for e in s.events())


def test_nonzero_exit_is_classified_from_stderr(tmp_path: Path) -> None:
    command = _script(tmp_path, "import sys\nsys.stderr.write('HTTP 429 Too Many Requests, try again in 30s')\n"
                                "sys.exit(3)\n")
    outcome = adapter_for(ProviderSpec(kind="command", command=command)).run(
        request(tmp_path, "x", "k" * 12), sink(tmp_path))
    assert outcome.failure is not None and outcome.failure.failure_class == "provider_rate_limit"
    assert outcome.failure.suggested_delay_ms == 30_000
