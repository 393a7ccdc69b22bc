"""Every CLI adapter against its fake: success, a rate limit with exit 0, an auth failure, a hang.

The fakes replay each CLI's real event format; the code under test is the real adapter and runner.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from provider_helpers import KIND_SPECS, request, sink, types

from awp_pipelines.core.providers.process import group_alive
from awp_pipelines.core.providers.registry import adapter_for
from awp_pipelines.core.records.events import EventSink

KEY = "sk-test-fake-credential-0123456789"
# kind -> (reset delay the rate-limit scenario states, in ms; the session id the fake reports)
RATE_LIMIT_DELAY = {"claude_code": 3_600_000, "codex": 7_500_000, "opencode": 45_000, "gemini": 10_800_000,
                    "amp": 3_600_000}
SESSION = {"claude_code": "4f1c2b9e-0d7a-4c55-9a43-claude-session", "codex": "0199a7f3-5c1e-7b20-8d3a-codex-thread",
           "opencode": "ses_494719016ffe85dkDMj0FPRbHK", "gemini": "b2b90938-611f-4bd0-adf6-829e14549653",
           "amp": "4f1c2b9e-0d7a-4c55-9a43-claude-session"}  # Amp's stream is Claude Code's: its fake replays that
KINDS = sorted(KIND_SPECS)


def _run(tmp: Path, kind: str, prompt: str, **kw: object) -> tuple[object, EventSink]:
    s = sink(tmp, (KEY,))
    adapter = adapter_for(KIND_SPECS[kind], name=kind)
    return adapter.run(request(tmp, prompt, KEY, **kw), s), s  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", KINDS)
def test_success_is_ok_with_session_usage_and_the_file_written(tmp_path: Path, kind: str) -> None:
    outcome, s = _run(tmp_path, kind, "Make it.\nawp-fake-write: made.txt = made")
    assert outcome.ok, outcome.failure
    assert outcome.session_id == SESSION[kind]
    assert (tmp_path / "work" / "made.txt").read_text() == "made\n"
    assert outcome.messages >= 1 and outcome.usage.output_tokens > 0
    seen = types(s)
    assert seen[0] == "run_started" and seen[-1] == "run_completed"
    assert "session_started" in seen and "tool_call_started" in seen


@pytest.mark.parametrize("kind", KINDS)
def test_rate_limit_with_exit_zero_is_classified_with_its_reset_time(tmp_path: Path, kind: str) -> None:
    outcome, _ = _run(tmp_path, kind, "awp-fake-scenario: ratelimit")
    failure = outcome.failure
    assert failure is not None and failure.failure_class == "provider_rate_limit", failure
    expected = RATE_LIMIT_DELAY[kind]
    assert expected - 120_000 <= (failure.suggested_delay_ms or 0) <= expected


@pytest.mark.parametrize("kind", KINDS)
def test_auth_failure_is_an_auth_claim(tmp_path: Path, kind: str) -> None:
    outcome, _ = _run(tmp_path, kind, "awp-fake-scenario: auth")
    assert outcome.failure is not None and outcome.failure.failure_class == "provider_auth_claim", outcome.failure


@pytest.mark.parametrize("kind", KINDS)
def test_hang_is_a_transport_timeout_and_the_process_group_is_gone(tmp_path: Path, kind: str) -> None:
    outcome, s = _run(tmp_path, kind, "awp-fake-scenario: hang", timeout_ms=60_000, idle_ms=800)
    failure = outcome.failure
    assert failure is not None and failure.failure_class == "transport_timeout" and failure.resumeable
    [ended] = [e for e in s.events() if e["type"] == "run_failed"]
    assert ended["ended"] == "idle" and not group_alive(ended["pgid"])


def test_wall_clock_deadline_ends_a_session_that_keeps_talking(tmp_path: Path) -> None:
    # Codex offline prints "Reconnecting..." errors and then waits: the deadline, not idleness, ends it here.
    # The deadline leaves a loaded machine seconds to start the fake: at 0.9 s its first line could miss it.
    outcome, s = _run(tmp_path, "codex", "awp-fake-scenario: offline", timeout_ms=3_000, idle_ms=60_000)
    failure = outcome.failure
    assert failure is not None and failure.failure_class == "transport_timeout"
    assert failure.provider_code == "deadline" and "Reconnecting" in failure.message
    [ended] = [e for e in s.events() if e["type"] == "run_failed"]
    assert not group_alive(ended["pgid"])


def test_a_missing_executable_is_a_launch_failure(tmp_path: Path) -> None:
    from awp_pipelines.core.packet.providers_config import ProviderSpec

    adapter = adapter_for(ProviderSpec(kind="codex", command=str(tmp_path / "no-such-codex")))
    outcome = adapter.run(request(tmp_path, "x", KEY), sink(tmp_path))
    assert outcome.failure is not None and outcome.failure.failure_class == "launch_failed"


def test_a_cli_missing_in_the_sandbox_is_refused_once_before_it_starts(tmp_path: Path) -> None:
    """Under the sandbox the wrapper starts, not the CLI: it exited 127 ("awp egress: cannot run claude: [Errno 2]"),
    which read as a runtime claim and was retried three times under `--skip-preflight`. The adapter looks first."""
    import sys
    from dataclasses import replace

    class Wrapper:  # what the sandbox does with a CLI it cannot find
        started = False

        def command(self, argv: list[str], cwd: Path) -> list[str]:
            Wrapper.started = True
            return [sys.executable, "-c", f"import sys; sys.stderr.write('awp egress: cannot run {argv[0]}: "
                    "[Errno 2] No such file or directory'); sys.exit(127)"]

        def environment(self, env: dict[str, str]) -> dict[str, str]:
            return env

    adapter = adapter_for(KIND_SPECS["claude_code"].model_copy(update={"command": "no-such-awp-claude"}))
    s = sink(tmp_path)
    outcome = adapter.run(replace(request(tmp_path, "x", KEY), sandbox=Wrapper()), s)  # type: ignore[arg-type]
    failure = outcome.failure
    assert failure is not None and (failure.failure_class, failure.retryable, failure.provider_code) == (
        "launch_failed", False, "cli_missing"), failure
    assert "`no-such-awp-claude` is not on PATH" in failure.message and not Wrapper.started


RESUME_FLAGS = {"claude_code": ["--resume=sess-42"], "codex": ["resume", "sess-42"], "opencode": ["-s", "sess-42"],
                "gemini": ["-r", "sess-42"], "amp": ["threads", "continue", "sess-42"]}


@pytest.mark.parametrize("kind", KINDS)
def test_resume_continues_the_providers_own_session(tmp_path: Path, kind: str) -> None:
    from dataclasses import replace

    adapter = adapter_for(KIND_SPECS[kind], name=kind)
    req = replace(request(tmp_path, "Continue", KEY), session_id="sess-42", mode="resume")
    argv = adapter.argv(req, resume=True)  # type: ignore[attr-defined]
    flags = RESUME_FLAGS[kind]
    assert any(argv[i:i + len(flags)] == flags for i in range(len(argv)))
    outcome = adapter.resume(req, sink(tmp_path))
    assert outcome.ok and outcome.session_id == "sess-42"


@pytest.mark.parametrize("kind", KINDS)
def test_resume_without_a_session_id_fails_as_a_transport_value_not_an_exception(tmp_path: Path, kind: str) -> None:
    outcome = adapter_for(KIND_SPECS[kind]).resume(request(tmp_path, "Continue", KEY), sink(tmp_path))
    assert outcome.failure is not None and outcome.failure.provider_code == "no_session"
