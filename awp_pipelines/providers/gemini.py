"""Gemini CLI: `gemini -p PROMPT -o stream-json`; resume with `-r ID`.

Events: init, message (assistant deltas), tool_use, tool_result, error, result{status, error, stats}.
Exit codes say a little: 41 auth, 42 input, 44 sandbox, 52 config, 53 turn limit, 54 tool, 130 cancel.
A `TerminalQuotaError` is an exhausted quota, a `RetryableQuotaError` a short rate limit.
"""

from __future__ import annotations

from typing import Any, ClassVar

from awp_pipelines.failures import FailureClass, FailureEnvelope
from awp_pipelines.providers.base import ProviderRequest
from awp_pipelines.providers.classify import DAY_MS, class_of_text, envelope, reset_delay_ms
from awp_pipelines.providers.cli import CliAdapter, StreamParser, flag
from awp_pipelines.providers.process import ProcessResult

APPROVAL = {"default": "default", "auto": "auto_edit", "bypass": "yolo", "plan": "plan"}
EXIT_CLASSES: dict[int, FailureClass] = {41: "provider_auth_claim", 42: "provider_config_claim",
                                         44: "provider_config_claim", 52: "provider_config_claim",
                                         53: "provider_runtime_claim", 54: "provider_runtime_claim",
                                         130: "user_cancelled"}
_MAX_MESSAGE_CHARS = 1 << 20  # one assistant message is buffered from its deltas, up to this much


class GeminiStreamParser(StreamParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._text: list[str] = []
        self._size = 0

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
            else:
                self.fail(self._error(event.get("error") or {}))
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
        return envelope(class_of_text(message), message, code=etype, now=self.now())

    def finish(self, result: ProcessResult) -> FailureEnvelope | None:
        self._flush()
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

    def argv(self, request: ProviderRequest, resume: bool = False) -> list[str]:
        argv = [self.command, "-p", request.prompt_text, "-o", "stream-json", *flag("-m", request.model),
                *flag("--approval-mode", request.permission_mode, APPROVAL),
                *flag("--allowed-tools", request.allowed_tools)]
        if resume and request.session_id:
            argv += ["-r", request.session_id]
        return argv
