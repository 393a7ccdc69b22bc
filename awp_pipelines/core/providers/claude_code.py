"""Claude Code: `claude -p PROMPT --output-format stream-json --verbose`; resume with `--resume ID`.

Events (reference/agent-clis.md): system/init, assistant, user (tool results), rate_limit_event, system/
api_retry, result. Exit 0 with `is_error: true` happens (#79500), so the verdict comes from the events. A
429, 529 or 401 shows first as the CLI's own `api_retry` events, which it would repeat silently for
minutes: the parser stops the session on the first one and classifies it.

Agent control: the agent's Bash tool inherits the session's environment (environment.agent_env): the
control channel and an `awp` first on PATH, so `awp agent-control repeat|finish|…` works when the packet
allows Bash (`allowed_tools: [Bash]`, or a permission mode that runs it).
"""

from __future__ import annotations

from typing import Any, ClassVar

from awp_pipelines.core.providers.base import ProviderRequest
from awp_pipelines.core.providers.classify import class_of_error, envelope, epoch_delay_ms, error_name
from awp_pipelines.core.providers.cli import CliAdapter, StreamParser, flag
from awp_pipelines.core.providers.process import STOP
from awp_pipelines.core.records.failures import FailureClass

PERMISSION_MODES = {"auto": "acceptEdits", "bypass": "bypassPermissions", "plan": "plan", "default": "default"}
# api_retry statuses worth acting on at once: waiting through ten retries changes nothing.
_STOP_STATUSES = frozenset({401, 402, 403, 429, 529})
_MAX_TRANSIENT_RETRIES = 3  # other statuses (500, no server) get a few of the CLI's own retries


class ClaudeStreamParser(StreamParser):
    retries = 0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Usage counted live from each API message (once per message id), so a spend cap sees it mid-session;
        # the result's totals then add only what the live counts missed, so the session sums to them exactly.
        self.live_messages: set[str] = set()
        self.live = {"input_tokens": 0, "output_tokens": 0, "cached_input_tokens": 0}

    def handle(self, event: dict[str, Any]) -> object:
        kind = event.get("type")
        if kind == "system":
            return self._system(event)
        if kind == "assistant":
            self._assistant(event)
        elif kind == "user":
            self._user(event)
        elif kind == "rate_limit_event":
            return self._rate_limit(event)
        elif kind == "result":
            self._result(event)
        return None

    def _system(self, event: dict[str, Any]) -> object:
        subtype = event.get("subtype")
        if subtype == "init":
            self.start_session(event.get("session_id"), model=event.get("model"), cwd=event.get("cwd"),
                               permission_mode=event.get("permissionMode"), api_key_source=event.get("apiKeySource"))
            return None
        if subtype != "api_retry":
            return None
        status = event.get("error_status")
        error = str(event.get("error") or "unknown")
        delay = event.get("retry_delay_ms")
        self.retries += 1
        self.last_error = f"api_retry {self.retries}: {error} (status {status})"
        if status in (429, 529):
            self.sink.rate_limit_notice(status="retrying", error_status=status, error=error, retry_in_ms=delay,
                                        retry_attempt=event.get("attempt"))
        else:
            self.sink.error(self.last_error, error_status=status, retry_in_ms=delay)
        if status in _STOP_STATUSES or self.retries >= _MAX_TRANSIENT_RETRIES:
            # Its structured error first (`authentication_failed`: a key refused, the same on every try).
            cls = class_of_error(error, status, error, "transport_disconnect")
            self.fail(envelope(cls, f"Claude API {error} (HTTP {status}); stopped after the CLI's retry "
                               f"{event.get('attempt')}/{event.get('max_retries')}", code=f"api_retry_{status}",
                               delay_ms=int(delay) if isinstance(delay, int | float) and status == 429 else None,
                               now=self.now(), name=error))
            return STOP
        return None

    def _assistant(self, event: dict[str, Any]) -> None:
        message = event.get("message") or {}
        self._live_usage(message)
        for block in message.get("content") or []:
            if not isinstance(block, dict):
                continue
            btype = block.get("type")
            if btype == "text" and block.get("text"):
                self.sink.message(block["text"])
            elif btype == "thinking" and block.get("thinking"):
                self.sink.thinking(block["thinking"])
            elif btype == "tool_use":
                self.sink.tool_call_started(str(block.get("name")), block.get("input"), block.get("id"))
        error = event.get("error")
        if error:
            text = " ".join(str(b.get("text")) for b in message.get("content") or []
                            if isinstance(b, dict) and b.get("text")) or str(error)
            self.last_error = text
            # The error it names ("model_not_found" as 2.1.197 says it: STRUCTURED_ERRORS), else what its text says.
            cls = class_of_error(error, None, text)
            self.fail(envelope(cls, text, code=str(error), now=self.now()))

    def _user(self, event: dict[str, Any]) -> None:
        for block in (event.get("message") or {}).get("content") or []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                content = block.get("content")
                if isinstance(content, list):
                    content = " ".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
                if block.get("is_error"):
                    self.sink.tool_call_failed("tool", str(content), block.get("tool_use_id"))
                else:
                    self.sink.tool_call_completed("tool", content, block.get("tool_use_id"))

    def _rate_limit(self, event: dict[str, Any]) -> object:
        info = event.get("rate_limit_info") or {}
        status = info.get("status")
        resets = info.get("resetsAt")
        self.sink.rate_limit_notice(status=status, resets_at=resets, limit_type=info.get("rateLimitType"),
                                    utilization=info.get("utilization"))
        if status == "rejected":
            self.fail(envelope("provider_rate_limit", f"Claude rate limit rejected ({info.get('rateLimitType')})",
                               code="rate_limit_rejected", delay_ms=epoch_delay_ms(resets, self.now()),
                               now=self.now()))
            return STOP
        return None

    def _live_usage(self, message: dict[str, Any]) -> None:
        usage, ident = message.get("usage"), message.get("id")
        if not isinstance(usage, dict) or not ident or ident in self.live_messages:
            return
        self.live_messages.add(str(ident))
        counts = _tokens(usage)
        for key, value in counts.items():
            self.live[key] += value
        if any(counts.values()):
            self.sink.usage(input_tokens=counts["input_tokens"], output_tokens=counts["output_tokens"],
                            cached_input_tokens=counts["cached_input_tokens"])

    def _result(self, event: dict[str, Any]) -> None:
        self.start_session(event.get("session_id"))
        totals = _tokens(event.get("usage") or {})
        cost = event.get("total_cost_usd")
        # The session's totals, less what was counted live (never below zero: the live counts are the API's own).
        missed = {k: max(0, v - self.live[k]) for k, v in totals.items()}
        self.sink.usage(input_tokens=missed["input_tokens"], output_tokens=missed["output_tokens"],
                        cached_input_tokens=missed["cached_input_tokens"], cost_usd=float(cost or 0.0),
                        cost_reported=cost is not None, cumulative=False)
        if not event.get("is_error") and event.get("subtype") == "success":
            self.completed = True
            return
        text = str(event.get("result") or event.get("subtype") or "error")
        status = event.get("api_error_status")
        name = error_name(text)  # the API's own error type in the body it quotes: `not_found_error`
        if event.get("subtype") in ("error_max_turns", "error_max_budget_usd"):
            cls: FailureClass = "provider_runtime_claim"
        else:
            cls = class_of_error(name, int(status) if status is not None else None, text)
        self.last_error = text
        self.fail(envelope(cls, text, code=str(status or event.get("subtype") or "is_error"), now=self.now(),
                           name=name))


def _tokens(usage: dict[str, Any]) -> dict[str, int]:
    """Anthropic's usage in AWP's counts: cache writes are input, cache reads are cached input."""
    return {"input_tokens": int(usage.get("input_tokens") or 0) + int(usage.get("cache_creation_input_tokens") or 0),
            "output_tokens": int(usage.get("output_tokens") or 0),
            "cached_input_tokens": int(usage.get("cache_read_input_tokens") or 0)}


class ClaudeCodeAdapter(CliAdapter):
    kind: ClassVar[str] = "claude_code"
    default_command: ClassVar[str] = "claude"
    parser_class = ClaudeStreamParser

    def argv(self, request: ProviderRequest, resume: bool = False) -> list[str]:
        argv = [self.command, "-p", request.prompt_text, "--output-format", "stream-json", "--verbose",
                *flag("--model", request.model),
                *flag("--permission-mode", request.permission_mode, PERMISSION_MODES),
                *flag("--allowedTools", request.allowed_tools), *flag("--max-turns", request.max_turns),
                *flag("--system-prompt", request.system_prompt),
                *flag("--append-system-prompt", request.append_system_prompt)]
        if resume and request.session_id:
            argv += [f"--resume={request.session_id}"]
        return argv
