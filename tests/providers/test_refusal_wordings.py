"""Each supported CLI's own refusal wordings, at the classifier: its adapter's parser is fed the CLI's exact
output (stdout events, stderr, exit code) and must name the class, and for an unknown model, a missing login
or a bad flag mark it deterministic (not retried, not repaired: one Attempt), while a quota stays a rate limit
the chain falls back from. The wordings come from the real CLIs run against the local fake APIs
(test_real_refusals.py, the session that wrote this) and from shared/reference/agent-clis.md; the table in
docs/providers-and-agents.md lists them."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from provider_helpers import KIND_SPECS, sink

from awp_pipelines.core.decisions.policy import AttemptFact, chain_of, decide
from awp_pipelines.core.packet.model.recovery import RecoveryConfig
from awp_pipelines.core.providers.process import ProcessResult
from awp_pipelines.core.providers.registry import adapter_for


def _claude_error(error: str, text: str, status: int | None) -> list[str]:
    assistant = {"type": "assistant", "error": error, "session_id": "s1",
                 "message": {"model": "<synthetic>", "role": "assistant", "content": [{"type": "text", "text": text}]}}
    result = {"type": "result", "subtype": "success", "is_error": True, "api_error_status": status,
              "result": text, "session_id": "s1"}
    return [json.dumps(assistant), json.dumps(result)]


def _codex_failed(message: str) -> list[str]:
    return [json.dumps({"type": "thread.started", "thread_id": "t1"}), json.dumps({"type": "turn.started"}),
            json.dumps({"type": "error", "message": message}),
            json.dumps({"type": "turn.failed", "error": {"message": message}})]


def _opencode_error(name: str, data: dict) -> list[str]:
    return [json.dumps({"type": "error", "timestamp": 1, "sessionID": "ses_1", "error": {"name": name, "data": data}})]


def _gemini_result(etype: str, message: str) -> list[str]:
    return [json.dumps({"type": "init", "session_id": "g1", "model": "gemini-2.5-flash"}),
            json.dumps({"type": "result", "status": "error", "error": {"type": etype, "message": message}})]


UNKNOWN = "provider_config_claim"
NO_LOGIN = "provider_auth_claim"
LIMIT = "provider_rate_limit"
OUTAGE = "provider_capacity"
# (CLI, what, stdout lines, stderr, exit code) → (class, deterministic)
CASES = [
    ("claude_code", "unknown model", _claude_error(
        "model_not_found", "There's an issue with the selected model (claude-nope-9). It may not exist or you may "
        "not have access to it. Run --model to pick a different model.", 404), "", 1, UNKNOWN, True),
    ("claude_code", "unknown model (the API's 404)", [json.dumps({
        "type": "result", "subtype": "success", "is_error": True, "api_error_status": 404, "session_id": "s1",
        "result": 'API Error: 404 {"type":"error","error":{"type":"not_found_error","message":"model: claude-x"}}'})],
     "", 1, UNKNOWN, True),
    ("claude_code", "not logged in", _claude_error("authentication_failed", "Not logged in · Please run /login", None),
     "", 1, NO_LOGIN, True),
    ("claude_code", "invalid API key", _claude_error("authentication_failed", "Invalid API key · Please run /login",
                                                     None), "", 1, NO_LOGIN, True),
    ("claude_code", "key refused (its own retry of the 401)", [json.dumps({
        "type": "system", "subtype": "api_retry", "attempt": 1, "max_retries": 10, "retry_delay_ms": 600,
        "error_status": 401, "error": "authentication_failed", "session_id": "s1"})], "", None, NO_LOGIN, True),
    ("claude_code", "bad flag", [], "error: unknown option '--bogus-flag'\n", 1, UNKNOWN, True),
    ("claude_code", "outage (its own retry of the 529)", [json.dumps({
        "type": "system", "subtype": "api_retry", "attempt": 1, "max_retries": 10, "retry_delay_ms": 600,
        "error_status": 529, "error": "overloaded_error", "session_id": "s1"})], "", None, OUTAGE, False),
    ("claude_code", "quota", _claude_error("rate_limit", "Claude AI usage limit reached|1999999999", 429), "", 1,
     LIMIT, False),
    ("codex", "unknown model", _codex_failed("The model `gpt-9` does not exist or you do not have access to it."), "",
     1, UNKNOWN, True),
    ("codex", "not logged in", _codex_failed("Missing environment variable: `OPENAI_API_KEY`."), "", 1, NO_LOGIN,
     True),
    ("codex", "bad flag", [], "error: unexpected argument '--bogus-flag' found\n\n  tip: to pass '--bogus-flag' as a "
     "value, use '-- --bogus-flag'\n\nUsage: codex exec [OPTIONS] [PROMPT]\n", 2, UNKNOWN, True),
    ("codex", "quota", _codex_failed("You've hit your usage limit. Upgrade to Pro or try again at 3:45 PM."), "", 1,
     LIMIT, False),
    ("opencode", "unknown model", _opencode_error("ProviderModelNotFoundError",
                                                  {"providerID": "opencode", "modelID": "nope-free"}), "", 1,
     UNKNOWN, True),
    ("opencode", "unknown model (the API's 404)", _opencode_error("APIError", {"message": "model: claude-x",
                                                                             "statusCode": 404}), "", 1,
     UNKNOWN, True),
    ("opencode", "not logged in", _opencode_error("ProviderAuthError", {"providerID": "opencode",
                                                                       "message": "Invalid API key"}), "", 1,
     NO_LOGIN, True),
    ("opencode", "not logged in (no key: its NamedError, no telling text)", _opencode_error("ProviderAuthError", {
        "providerID": "anthropic", "message": "Anthropic API key is missing. Pass it using the 'apiKey' parameter or "
        "the ANTHROPIC_API_KEY environment variable."}), "", 1, NO_LOGIN, True),
    ("opencode", "not logged in (no key: its error log)", [], 'timestamp=2026-12-04T17:53:42.775Z level=ERROR '
     'run=c0536c3e message="stream error" providerID=anthropic modelID=claude-haiku-4-5 session.id=ses_1 small=false '
     'agent=build mode=primary error.error="AI_LoadAPIKeyError: Anthropic API key is missing. Pass it using the '
     "'apiKey' parameter or the ANTHROPIC_API_KEY environment variable.\"\n", None, NO_LOGIN, True),
    ("opencode", "bad flag", [], "opencode run [message..]\n\nrun opencode with a message\n", 1, UNKNOWN, True),
    ("opencode", "quota", _opencode_error("APIError", {"message": "Rate limit exceeded. Try again in 45s",
                                                      "statusCode": 429}), "", 0, LIMIT, False),
    ("gemini", "unknown model", _gemini_result("Error", "[API Error: models/gemini-9 is not found for API version "
                                               "v1beta, or is not supported for generateContent.]"), "", 1,
     UNKNOWN, True),
    ("gemini", "unknown model (Google's other 404: its stderr names the error)",
     _gemini_result("unknown", "[API Error: Requested entity was not found.]"), "Warning: 256-color support not "
     "detected.\nError when talking to Gemini API Full report available at: /tmp/gemini-client-error-Turn.run-"
     "sendMessageStream-2026-12-04T17-46-48-503Z.json ModelNotFoundError: Requested entity was not found.\n    at "
     "classifyGoogleError (file:///x/bundle/chunk-JDPZ4CE3.js:307292:12)\n  code: 404\n}\n", 1, UNKNOWN, True),
    ("gemini", "key refused (the API's 401: its body's type)", _gemini_result(
        "unknown", '[API Error: {"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"'
        '}}]'), "", 1, NO_LOGIN, True),
    ("gemini", "not logged in", [], "Please set an Auth method in your /root/.gemini/settings.json or specify one of "
     "the following environment variables before running: GEMINI_API_KEY, GOOGLE_GENAI_USE_VERTEXAI, "
     "GOOGLE_GENAI_USE_GCA\n", 41, NO_LOGIN, True),
    ("gemini", "not logged in (no key in its settings)", [], "Invalid auth method selected.\n", 41, NO_LOGIN, True),
    ("gemini", "bad flag", [], "Unknown arguments: bogus-flag, bogusFlag\nUsage: gemini [options] [command]\n", 1,
     UNKNOWN, True),
    ("amp", "not logged in (no key: its login flow, which then waits for a code)",
     ["No API key found. Starting login flow..."], "", None, NO_LOGIN, True),
    ("amp", "key refused", [], "Error: Invalid or missing API key. Run 'amp login' to authenticate.\n", None,
     NO_LOGIN, True),
    ("amp", "bad flag", [], "Error: error: unknown option '--bogus-flag'\n", 1, UNKNOWN, True),
    ("gemini", "quota", _gemini_result("TerminalQuotaError", "You have exhausted your daily quota on this model."),
     "", 1, LIMIT, False),
]


@pytest.mark.parametrize(("kind", "what", "stdout", "stderr", "code", "cls", "deterministic"), CASES,
                         ids=[f"{c[0]}: {c[1]}" for c in CASES])
def test_each_clis_own_wording_is_classified(tmp_path: Path, kind: str, what: str, stdout: list[str], stderr: str,
                                             code: int, cls: str, deterministic: bool) -> None:
    parser = adapter_for(KIND_SPECS[kind], name=kind).parser_class(sink(tmp_path))
    for line in stdout:
        parser.feed(line)
    for line in stderr.splitlines():
        parser.feed_stderr(line)
    ended = "stopped" if code is None else "exited"  # None: the parser stopped the CLI at that event
    failure = parser.finish(ProcessResult(ended, code, stderr, 10, None, len(stdout)))
    assert failure is not None and failure.failure_class == cls, failure
    # One Attempt: a refusal that repeats identically is neither retried nor repaired; a quota is a limit.
    assert (failure.retryable, failure.repairable) == (not deterministic, not deterministic), failure
    if cls == LIMIT:
        assert failure.suggested_delay_ms, failure
    # What the decision makes of it, alone on its target: a refusal ends the AgentRun after this one Attempt (another
    # target of a chain would get the next), a limit or an outage is retried after its pause.
    fact = AttemptFact(number=1, mode="run", result="provider_failed", failure_class=failure.failure_class,
                       retryable=failure.retryable, repairable=failure.repairable, provider=kind,
                       suggested_delay_ms=failure.suggested_delay_ms)
    verdict = decide([fact], RecoveryConfig(), chain_of(kind, None, None, [], []), random.Random(1))
    assert verdict.action == ("fail" if deterministic else "retry"), verdict
