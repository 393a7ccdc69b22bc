"""Claude Code adapter against a fake `claude` that replays the real stream-json events."""

from __future__ import annotations

from pathlib import Path

from provider_helpers import KIND_SPECS, request, sink, types

from awp_pipelines.core.providers.claude_code import ClaudeCodeAdapter
from awp_pipelines.core.providers.process import group_alive

ADAPTER = ClaudeCodeAdapter(KIND_SPECS["claude_code"], name="claude")
KEY = "sk-ant-test-0123456789abcdefghij"


def test_success_streams_normalised_events_usage_cost_and_session(tmp_path: Path) -> None:
    s = sink(tmp_path, (KEY,))
    outcome = ADAPTER.run(request(tmp_path, "awp-fake-write: out.txt = hi", KEY), s)
    assert outcome.ok, outcome.failure
    assert outcome.session_id == "4f1c2b9e-0d7a-4c55-9a43-claude-session"
    assert (tmp_path / "work" / "out.txt").read_text() == "hi\n"
    seen = types(s)
    for kind in ("run_started", "session_started", "thinking", "message_received", "tool_call_started",
                 "tool_call_completed", "token_usage_updated", "run_completed"):
        assert kind in seen, kind
    assert outcome.usage.input_tokens == 1600 and outcome.usage.output_tokens == 250
    assert outcome.usage.cached_input_tokens == 4000
    assert outcome.usage.cost_usd == 0.0123 and outcome.usage.cost_reported
    assert KEY not in (tmp_path / "events.jsonl").read_text()


def test_api_retry_429_is_acted_on_at_the_first_notice_and_the_group_killed(tmp_path: Path) -> None:
    s = sink(tmp_path)
    outcome = ADAPTER.run(request(tmp_path, "awp-fake-scenario: retry429", KEY), s)
    [ended] = [e for e in s.events() if e["type"] == "run_failed"]
    assert ended["ended"] == "stopped"  # at the first notice: left alone, the fake would retry for 70 s and exit
    assert not group_alive(ended["pgid"])
    assert outcome.failure is not None and outcome.failure.failure_class == "provider_rate_limit"
    assert outcome.failure.suggested_delay_ms == 7000
    assert "rate_limit_notice" in types(s)


def test_permission_mode_tools_and_model_map_to_claude_flags(tmp_path: Path) -> None:
    req = request(tmp_path, "x", KEY, model="sonnet", permission_mode="auto", allowed_tools=("Write", "Read"))
    argv = ADAPTER.argv(req)
    assert argv[argv.index("--model") + 1] == "sonnet"
    assert argv[argv.index("--permission-mode") + 1] == "acceptEdits"
    assert argv[argv.index("--allowedTools") + 1] == "Write,Read"
    assert argv[1:3] == ["-p", "x"] and "--verbose" in argv



def test_usage_is_counted_live_per_api_message_and_the_result_only_adds_what_it_missed(tmp_path: Path) -> None:
    from awp_pipelines.core.providers.claude_code import ClaudeStreamParser

    s = sink(tmp_path, ())
    parser = ClaudeStreamParser(s)
    # One API message split into two events (text, tool use), as the CLI streams it: its usage counts once.
    for block in ({"type": "text", "text": "Writing."}, {"type": "tool_use", "id": "t1", "name": "Write", "input": {}}):
        parser.handle({"type": "assistant", "message": {"id": "msg_1", "content": [block], "usage": {
            "input_tokens": 100, "cache_creation_input_tokens": 20, "cache_read_input_tokens": 300,
            "output_tokens": 40}}})
    assert (s.counters.tokens["input_tokens"], s.counters.tokens["output_tokens"]) == (120, 40)  # seen mid-session
    parser.handle({"type": "result", "subtype": "success", "is_error": False, "total_cost_usd": 0.01,
                   "usage": {"input_tokens": 250, "cache_creation_input_tokens": 20, "cache_read_input_tokens": 300,
                             "output_tokens": 90}})
    tokens = s.counters.tokens
    assert (tokens["input_tokens"], tokens["output_tokens"], tokens["cached_input_tokens"]) == (270, 90, 300)
    assert s.counters.cost_usd == 0.01 and len([e for e in s.events() if e["type"] == "token_usage_updated"]) == 2
