"""The shared runner's line reading and bounds, and the text/status classification helpers."""

from __future__ import annotations

import os
import random
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from awp_pipelines.core.providers import process
from awp_pipelines.core.providers.classify import class_of_status, class_of_text, reset_delay_ms, retry_after_ms
from awp_pipelines.core.providers.process import STOP, run_streaming

NOW = datetime(2026, 11, 30, 17, 0, 0, tzinfo=UTC)
ENV = {"PATH": os.environ["PATH"]}


def _py(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_an_over_long_line_is_cut_and_the_next_line_still_arrives(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(process, "MAX_LINE_BYTES", 1000)
    seen: list[str] = []
    result = run_streaming(_py("import sys; sys.stdout.write('x' * 300000 + '\\n{\"ok\": 1}\\nlast')"),
                           cwd=tmp_path, env=ENV, on_line=seen.append, deadline_ms=20_000, idle_ms=20_000)
    assert result.ended == "exited" and result.exit_code == 0
    assert [len(line) for line in seen] == [1000, 9, 4]  # the cut line, then the rest intact (no newline at EOF)


def test_the_handler_can_stop_the_session_and_the_group_is_killed(tmp_path: Path) -> None:
    code = "import time\nfor i in range(100):\n    print(i, flush=True)\n    time.sleep(0.2)"
    result = run_streaming(_py(code), cwd=tmp_path, env=ENV, on_line=lambda line: STOP if line == "2" else None,
                           deadline_ms=30_000, idle_ms=30_000)
    assert result.ended == "stopped"  # by the handler at line "2", not by the 30 s deadline
    assert not process.group_alive(result.pgid or 0)


def test_stderr_keeps_only_its_tail(tmp_path: Path) -> None:
    code = "import sys; sys.stderr.write('a' * 100000 + 'THE END'); sys.exit(3)"
    result = run_streaming(_py(code), cwd=tmp_path, env=ENV, on_line=lambda line: None, deadline_ms=20_000,
                           idle_ms=20_000)
    assert result.exit_code == 3 and result.stderr_tail.endswith("THE END")
    assert len(result.stderr_tail) <= process.STDERR_TAIL_BYTES


@pytest.mark.parametrize(("text", "expected_ms"), [
    ("Claude AI usage limit reached|1796058000", 1796058000 * 1000 - int(NOW.timestamp() * 1000)),
    ("You've hit your usage limit. Try again in 2 hours 5 minutes.", 7_500_000),
    ("Rate limit exceeded, retry in 45s", 45_000),
    ("You've hit your limit · resets 7pm", 2 * 3_600_000),
    ("You've hit your limit · resets 9am", 16 * 3_600_000),  # tomorrow morning
    ("Try again at 5:30 PM.", 30 * 60_000),
    ("try again at 2026-12-01 10:00", 17 * 3_600_000),
    ("something else went wrong", None),
])
def test_reset_times_are_read_from_provider_texts(text: str, expected_ms: int | None) -> None:
    assert reset_delay_ms(text, NOW) == expected_ms


def test_retry_after_in_seconds_or_as_an_http_date() -> None:
    assert retry_after_ms("7", NOW) == 7000
    assert retry_after_ms("Mon, 30 Nov 2026 17:01:00 GMT", NOW) == 60_000
    assert retry_after_ms("soon", NOW) is None


def test_statuses_and_texts_map_to_failure_classes() -> None:
    assert [class_of_status(s) for s in (429, 402, 401, 403, 529, 503, 400, None)] == [
        "provider_rate_limit", "provider_rate_limit", "provider_auth_claim", "provider_auth_claim",
        "provider_capacity", "provider_capacity", "provider_config_claim", "transport_disconnect"]
    assert class_of_text("Invalid API key · Please run /login") == "provider_auth_claim"
    assert class_of_text("Overloaded") == "provider_capacity"
    assert class_of_text("Quota exceeded for quota metric") == "provider_rate_limit"
    assert class_of_text("stream disconnected before completion") == "transport_disconnect"
    assert class_of_text("the model said no") == "provider_runtime_claim"


def test_stderr_lines_reach_their_handler_which_can_stop_the_session(tmp_path: Path) -> None:
    code = ("import sys, time\nfor i in range(50):\n    sys.stderr.write(f'Attempt {i} failed\\n'); sys.stderr.flush()"
            "\n    time.sleep(0.2)")
    seen: list[str] = []

    def on_stderr(line: str) -> object:
        seen.append(line)
        return STOP if line == "Attempt 2 failed" else None

    result = run_streaming(_py(code), cwd=tmp_path, env=ENV, on_line=lambda line: None, on_stderr=on_stderr,
                           deadline_ms=30_000, idle_ms=30_000)
    assert result.ended == "stopped" and seen == ["Attempt 0 failed", "Attempt 1 failed", "Attempt 2 failed"]
    assert not process.group_alive(result.pgid or 0)


def test_lines_are_the_same_whatever_the_chunks_they_arrive_in() -> None:
    rng = random.Random(7)
    pieces = [b"\n", b"\n\n", b"abc", b'{"k": "\xc3\xa9"}', b"\xe2\x82", b"\xff", b"\xf0\x9f\x98\x80", b" " * 5]
    for _ in range(300):
        data = b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 40)))
        cuts = sorted(rng.sample(range(len(data) + 1), min(len(data) + 1, rng.randint(0, 6))))
        chunks = [data[i:j] for i, j in zip([0, *cuts], [*cuts, len(data)], strict=True)]
        lines = process._Lines()
        seen = [line for chunk in chunks for line in lines.feed(chunk)]
        *whole, rest = data.split(b"\n")
        assert seen == [line.decode("utf-8", errors="replace") for line in whole], (data, chunks)
        assert lines.rest() == (rest.decode("utf-8", errors="replace") if rest.strip() else None)


def test_a_line_is_cut_at_the_cap_whether_it_arrives_in_one_chunk_or_in_many(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(process, "MAX_LINE_BYTES", 10)
    whole = process._Lines()
    assert [len(line) for line in whole.feed(b"x" * 25 + b"\nshort\n")] == [10, 5]
    pieces = process._Lines()
    seen = [line for chunk in (b"x" * 7, b"x" * 7, b"x" * 11 + b"\nshort\n") for line in pieces.feed(chunk)]
    assert [len(line) for line in seen] == [10, 5]
