"""OpenAI-compatible chat completions over HTTP (OpenRouter, OpenCode Zen, vLLM, Ollama) via `requests`.

One request per session: no tools, no native continuation. The status decides the class; `Retry-After`
becomes the suggested delay; a body that is not the expected JSON is a protocol error.

Agent control: not available (the model runs no commands); the iteration's default action applies.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar

import requests

from awp_pipelines.core.packet.bounds import stream_idle_ms
from awp_pipelines.core.packet.providers_config import ProviderSpec
from awp_pipelines.core.providers.base import ProviderOutcome, ProviderRequest
from awp_pipelines.core.providers.classify import class_of_status, envelope, retry_after_ms
from awp_pipelines.core.providers.environment import agent_env, credential_var
from awp_pipelines.core.records.events import EventSink
from awp_pipelines.core.records.failures import FailureEnvelope

CONNECT_TIMEOUT_S = 10.0
MAX_ERROR_BODY = 2000


def system_messages(request: ProviderRequest) -> list[dict[str, str]]:
    """`system_prompt` (the endpoint has no system prompt of its own to replace) then `append_system_prompt`."""
    texts = (request.system_prompt, request.append_system_prompt)
    return [{"role": "system", "content": text} for text in texts if text]


class OpenAIHttpAdapter:
    kind: ClassVar[str] = "openai_http"

    def __init__(self, spec: ProviderSpec, name: str | None = None) -> None:
        self.spec = spec
        self.name = name or self.kind

    def url(self, request: ProviderRequest) -> str:
        base = (request.account.base_url if request.account else None) or self.spec.base_url
        if not base:
            raise ValueError(f"provider {self.name}: openai_http needs a base_url")
        return base.rstrip("/") + "/chat/completions"

    def display_argv(self, request: ProviderRequest, resume: bool = False) -> list[str]:
        return ["POST", self.url(request), f"model={request.model or self.spec.default_model or ''}"]

    def resume(self, request: ProviderRequest, sink: EventSink) -> ProviderOutcome:
        failure = FailureEnvelope.for_class("transport_disconnect", "chat completions have no native session "
                                            "to continue; a new Attempt starts afresh", provider_code="no_resume")
        sink.run_failed(failure)
        return ProviderOutcome.from_sink(sink, failure, request.session_id)

    def run(self, request: ProviderRequest, sink: EventSink) -> ProviderOutcome:
        env = agent_env(self.kind, self.spec, request.account, request.env)
        key = env.get(credential_var(self.spec, request.account) or "")
        model = request.model or self.spec.default_model
        sink.run_started(provider=self.name, kind=self.kind, model=model, mode=request.mode,
                         account=request.account.name if request.account else None,
                         attempt_number=request.attempt_number, argv=self.display_argv(request))
        headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})}
        body = {"model": model, "messages": [*system_messages(request),
                                             {"role": "user", "content": request.prompt_text}]}
        read_s = min(request.timeout_ms, request.idle_timeout_ms or stream_idle_ms(request.timeout_ms)) / 1000
        session_id: str | None = None
        try:
            response = requests.post(self.url(request), json=body, headers=headers,
                                     timeout=(CONNECT_TIMEOUT_S, read_s))
            failure, session_id = self._read(response, sink)
        except requests.Timeout as err:
            failure = FailureEnvelope.for_class("transport_timeout", f"no answer in time: {err}",
                                                provider_code="timeout", secrets=[key or ""])
        except requests.ConnectionError as err:
            failure = FailureEnvelope.for_class("transport_disconnect", f"connection failed: {err}",
                                                provider_code="connection", secrets=[key or ""])
        if failure is not None:
            sink.run_failed(failure)
        else:
            sink.run_completed(session_id=session_id)
        return ProviderOutcome.from_sink(sink, failure, session_id)

    def _read(self, response: requests.Response, sink: EventSink) -> tuple[FailureEnvelope | None, str | None]:
        now = datetime.now(UTC)
        if response.status_code != 200:
            text = response.text[:MAX_ERROR_BODY]
            delay = retry_after_ms(response.headers.get("Retry-After"), now)
            cls = class_of_status(response.status_code)
            if delay is not None or cls == "provider_rate_limit":
                sink.rate_limit_notice(status="rejected", error_status=response.status_code, retry_in_ms=delay)
            sink.error(f"HTTP {response.status_code}: {text}", error_status=response.status_code)
            return envelope(cls, f"HTTP {response.status_code}: {text}", code=f"http_{response.status_code}",
                            delay_ms=delay, now=now), None
        try:
            data: Any = response.json()
            message = data["choices"][0]["message"]
        except (ValueError, KeyError, IndexError, TypeError) as err:
            return FailureEnvelope.for_class("protocol_error", f"not a chat completion: {err!r}: "
                                             f"{response.text[:200]}", provider_code="malformed"), None
        session_id = data.get("id")
        if session_id:
            sink.session_started(str(session_id), model=data.get("model"))
        if message.get("reasoning"):
            sink.thinking(str(message["reasoning"]))
        sink.message(str(message.get("content") or ""))
        usage = data.get("usage") or {}
        cached = int((usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
        cost = usage.get("cost")  # OpenRouter reports it
        sink.usage(input_tokens=max(0, int(usage.get("prompt_tokens") or 0) - cached),
                   output_tokens=int(usage.get("completion_tokens") or 0), cached_input_tokens=cached,
                   reasoning_tokens=int((usage.get("completion_tokens_details") or {}).get("reasoning_tokens") or 0),
                   cost_usd=float(cost or 0.0), cost_reported=cost is not None)
        return None, str(session_id) if session_id else None
