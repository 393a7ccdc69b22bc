"""Gemini CLI: `gemini -p PROMPT -o stream-json`; resume with `-r ID`.

Events: init, message (assistant deltas), tool_use, tool_result, error, result{status, error, stats}.
Exit codes say a little: 41 auth, 42 input, 44 sandbox, 52 config, 53 turn limit, 54 tool, 130 cancel.
A `TerminalQuotaError` is an exhausted quota, a `RetryableQuotaError` a short rate limit. Its own
silent retries ("Attempt 1 failed with status 429") show only on stderr: a 429 or 401 there ends the
session at once, a 5xx at the second.

Agent control: its shell tool inherits the session's environment (environment.agent_env): the control
channel and an `awp` first on PATH.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, ClassVar

from awp_pipelines.core.providers.base import ProviderRequest
from awp_pipelines.core.providers.classify import (
    DAY_MS,
    class_of_error,
    class_of_status,
    envelope,
    error_name,
    reset_delay_ms,
)
from awp_pipelines.core.providers.cli import CliAdapter, StreamParser, flag
from awp_pipelines.core.providers.process import STOP, ProcessResult
from awp_pipelines.core.records.failures import FailureClass, FailureEnvelope

APPROVAL = {"default": "default", "auto": "auto_edit", "bypass": "yolo", "plan": "plan"}
EXIT_CLASSES: dict[int, FailureClass] = {41: "provider_auth_claim", 42: "provider_config_claim",
                                         44: "provider_config_claim", 52: "provider_config_claim",
                                         53: "provider_runtime_claim", 54: "provider_runtime_claim",
                                         130: "user_cancelled"}
_MAX_MESSAGE_CHARS = 1 << 20  # one assistant message is buffered from its deltas, up to this much
# Its silent retries show only on stderr: "Attempt 1 failed with status 429. Retrying with backoff..."
_RETRY = re.compile(r"Attempt (\d+) failed with status (\d{3})")
# Its structured error, which its result event calls `unknown`, shows on stderr: "Error when talking to Gemini API
# Full report available at: …json ModelNotFoundError: Requested entity was not found." then `  code: 404`.
_NAMED = re.compile(r"\b([A-Z]\w*Error): ")
_CODE = re.compile(r"^\s*code: (\d{3}),?\s*$")
_STOP_STATUSES = frozenset({401, 402, 403, 429})
_MAX_TRANSIENT_RETRIES = 2  # a 5xx may pass: one retry is let through, the second ends the session


class GeminiStreamParser(StreamParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._text: list[str] = []
        self._size = 0

    error_named: str | None = None  # the structured error its stderr named (ModelNotFoundError), and its status
    error_status: int | None = None
    result_error: dict[str, Any] | None = None  # a result event's error

    def feed_stderr(self, line: str) -> object:
        match = _RETRY.search(line)
        if match is None:
            named, code = _NAMED.search(line), _CODE.match(line)
            if named is not None and "Gemini API" in line and class_of_error(named.group(1), None, "", "unknown") \
                    != "unknown":
                self.error_named = named.group(1)
            elif code is not None and self.error_named is not None:
                self.error_status = int(code.group(1))
            return None
        attempt, status = int(match.group(1)), int(match.group(2))
        self.last_error = line.strip()[:500]
        if status == 429:
            self.sink.rate_limit_notice(status="retrying", error_status=status, retry_attempt=attempt)
        else:
            self.sink.error(self.last_error, error_status=status)
        if status in _STOP_STATUSES or attempt >= _MAX_TRANSIENT_RETRIES:
            self.fail(envelope(class_of_status(status), f"Gemini API status {status}; stopped at the CLI's retry "
                               f"{attempt}: {self.last_error}", code=f"retry_{status}", now=self.now()))
            return STOP
        return None

    def _flush(self) -> None:
        if self._text:
            self.sink.message("".join(self._text))
            self._text, self._size = [], 0

    def handle(self, event: dict[str, Any]) -> object:
        kind = event.get("type")
        if kind == "message" and event.get("role") == "assistant":
            text = str(event.get("content") or "")
            if self._size < _MAX_MESSAGE_CHARS:
                self._text.append(text[: _MAX_MESSAGE_CHARS - self._size])
                self._size += len(text)
            if not event.get("delta"):
                self._flush()
            return None
        self._flush()
        if kind == "init":
            self.start_session(event.get("session_id"), model=event.get("model"))
        elif kind == "tool_use":
            self.sink.tool_call_started(str(event.get("tool_name")), event.get("parameters"), event.get("tool_id"))
        elif kind == "tool_result":
            if event.get("status") == "error":
                error = event.get("error") or {}
                self.sink.tool_call_failed("tool", str(error.get("message") or "failed"), event.get("tool_id"))
            else:
                self.sink.tool_call_completed("tool", event.get("output"), event.get("tool_id"))
        elif kind == "error":
            self.last_error = str(event.get("message") or "error")
            self.sink.error(self.last_error, severity=event.get("severity"))
        elif kind == "result":
            stats = event.get("stats") or {}
            cached = int(stats.get("cached") or 0)
            self.sink.usage(input_tokens=max(0, int(stats.get("input_tokens") or 0) - cached),
                            output_tokens=int(stats.get("output_tokens") or 0), cached_input_tokens=cached,
                            reasoning_tokens=int(stats.get("thoughts") or 0))
            if event.get("status") == "success":
                self.completed = True
            else:  # judged at the end: the stderr line naming the error may come after it (two pipes)
                self.result_error = event.get("error") or {}
        return None

    def _error(self, error: dict[str, Any]) -> FailureEnvelope:
        etype = str(error.get("type") or "Error")
        message = str(error.get("message") or etype)
        self.last_error = message
        if etype == "TerminalQuotaError":
            # An exhausted daily quota: rest until the stated reset, else a day.
            delay = reset_delay_ms(message, self.now()) or DAY_MS
            return envelope("provider_rate_limit", message, code=etype, delay_ms=delay)
        if etype == "RetryableQuotaError":
            return envelope("provider_rate_limit", message, code=etype, now=self.now())
        code = error.get("code")
        if isinstance(code, int) and code in EXIT_CLASSES:
            return envelope(EXIT_CLASSES[code], message, code=f"{etype}:{code}", now=self.now())
        # Its result says `unknown` where stderr named the error (ModelNotFoundError, 404): that decides, then the text.
        named = (self.error_named or error_name(message)) if etype in ("unknown", "Error") else etype
        status = self.error_status if named == self.error_named else None
        cls = class_of_error(named, status, message)
        return envelope(cls, message, code=f"{named}:{status}" if named and status else (named or etype),
                        now=self.now())

    def finish(self, result: ProcessResult) -> FailureEnvelope | None:
        self._flush()
        if self.result_error is not None:
            self.fail(self._error(self.result_error))
        return super().finish(result)

    def exit_failure(self, result: ProcessResult) -> FailureEnvelope | None:
        cls = EXIT_CLASSES.get(result.exit_code or 0)
        if cls is None:
            return super().exit_failure(result)
        detail = self.last_error or result.stderr_tail.strip()[-1500:] or "no output"
        return envelope(cls, f"exit {result.exit_code}: {detail}", code=f"exit_{result.exit_code}", now=self.now())


class GeminiAdapter(CliAdapter):
    kind: ClassVar[str] = "gemini"
    default_command: ClassVar[str] = "gemini"
    parser_class = GeminiStreamParser

    def prepare(self, request: ProviderRequest, env: dict[str, str]) -> None:
        """Headless Gemini needs an auth method selected in settings: an account with an API key whose own
        config dir has no settings yet gets `gemini-api-key` (a user's settings are never touched)."""
        home = env.get(self.spec.config_dir_env or "")
        if request.account is None or not home or not env.get(self.spec.credential_env or ""):
            return
        settings = Path(home) / ".gemini" / "settings.json"
        if not settings.exists():
            settings.parent.mkdir(parents=True, exist_ok=True)
            settings.write_text(json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}}))

    def argv(self, request: ProviderRequest, resume: bool = False) -> list[str]:
        # --skip-trust: AWP chose the workspace; headless Gemini refuses an untrusted folder otherwise.
        argv = [self.command, "-p", request.prompt_text, "-o", "stream-json", "--skip-trust",
                *flag("-m", request.model),
                *flag("--approval-mode", request.permission_mode, APPROVAL),
                *flag("--allowed-tools", request.allowed_tools)]
        if resume and request.session_id:
            argv += ["-r", request.session_id]
        return argv
