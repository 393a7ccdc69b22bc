"""A long Claude stream through the adapter, the JSONL and the transcript: no secret gets through, whatever
field or chunk it arrives in, and the session's facts (usage, cost, session id, result) are as sent."""

from __future__ import annotations

import json
from pathlib import Path

from awp_pipelines.core.packet.providers_config import ProviderSpec
from awp_pipelines.core.providers.base import ProviderRequest
from awp_pipelines.core.providers.claude_code import ClaudeCodeAdapter
from awp_pipelines.core.records.events import EventSink
from awp_pipelines.core.records.transcript import METADATA_TRANSCRIPT_CHARS

SESSION = "9d2c-stream-redaction"
ACCOUNT_KEY = "acct-" + "Qz81-literal-value"  # no known shape: found as the account's literal value only
# Shapes found by pattern wherever they are (built here so this file holds none a scanner would flag).
SHAPED = ["sk-ant-" + "api03-" + "Zq9Xw8Vu7Ts6Rq5Po4", "AKIA" + "Q7RZ5MXW2KVJ4NPL", "ghp_" + "Kx7" * 12,
          "xoxb-" + "1234567890-abcdefghij", "-----BEGIN RSA PRIVATE KEY-----\nMIIEvQ\n-----END RSA PRIVATE KEY-----"]
# Secrets by where they stand: under a secret-named key, after `Bearer`, in an assignment.
SECRETS = [ACCOUNT_KEY, *SHAPED, "hunter2-by-key", "Yy6bearer-valueZ", "s3cr3t-assigned"]


def _turn(i: int) -> list[dict[str, object]]:
    secret = (ACCOUNT_KEY, *SHAPED)[i % (1 + len(SHAPED))]
    code = ("tests/test_x.py::test_case PASSED\n-rw-r--r-- 1 root root 4096 events.jsonl\n"
            f"api_key={SECRETS[-1]}\nAuthorization: Bearer {SECRETS[-2]}\n") * 3
    return [
        {"type": "assistant", "session_id": SESSION, "message": {"content": [
            {"type": "thinking", "thinking": f"plain thinking {i} " * 20 + secret},
            {"type": "text", "text": f"a message {i} with {secret} inside " * 10}]}},
        {"type": "assistant", "session_id": SESSION, "message": {"content": [
            {"type": "tool_use", "id": f"toolu_{i}", "name": "Bash",
             "input": {"command": f"echo {secret}", "env": {"token": "hunter2-by-key"}}}]}},
        {"type": "user", "session_id": SESSION, "message": {"content": [
            {"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": code if i % 2 else [
                {"type": "text", "text": f"output {i} {secret}"}]}]}},
    ]


def test_no_secret_reaches_the_jsonl_or_the_transcript_of_a_long_stream(tmp_path: Path) -> None:
    lines = [{"type": "system", "subtype": "init", "session_id": SESSION, "model": "m"}]
    turns = 0
    while sum(len(json.dumps(line)) for line in lines) < 3 << 19:  # more than one chunk of the reader's
        lines += _turn(turns)
        turns += 1
    lines.append({"type": "result", "subtype": "success", "is_error": False, "session_id": SESSION,
                  "total_cost_usd": 0.5, "usage": {"input_tokens": 7, "output_tokens": 3}})
    stream = tmp_path / "stream.jsonl"
    stream.write_text("".join(json.dumps(line) + "\n" for line in lines))
    fake = tmp_path / "claude"
    fake.write_text(f"#!/bin/sh\nexec cat {stream}\n")
    fake.chmod(0o755)
    sink = EventSink(tmp_path / "events.jsonl", "att-1", secrets=(ACCOUNT_KEY,))
    request = ProviderRequest(prompt_text="go", cwd=tmp_path, timeout_ms=60_000, env={})
    outcome = ClaudeCodeAdapter(ProviderSpec(kind="claude_code", command=str(fake))).run(request, sink)

    assert outcome.ok and outcome.session_id == SESSION
    assert outcome.usage.input_tokens == 7 and outcome.usage.cost_usd == 0.5 and outcome.usage.cost_reported
    assert outcome.messages == turns and sink.counters.tool_calls == turns
    written = (tmp_path / "events.jsonl").read_text()
    transcripts = [sink.transcript_markdown(), sink.transcript_markdown(METADATA_TRANSCRIPT_CHARS)]
    for secret in SECRETS:
        assert secret not in written, secret
        assert all(secret not in md for md in transcripts), secret
        assert json.dumps(secret)[1:-1] not in written, secret  # nor as JSON escapes it
    assert written.count("[REDACTED]") >= 3 * turns
