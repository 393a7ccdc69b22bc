"""A local HTTP server speaking enough of three model APIs for the real CLIs: Anthropic's Messages API
(Claude Code via ANTHROPIC_BASE_URL, OpenCode via its provider baseURL), OpenAI's Responses API (Codex, via
a model_providers base_url) and Gemini's streamGenerateContent (Gemini CLI, via GOOGLE_GEMINI_BASE_URL).

`scenario` decides every answer: "success" streams a short text reply (SSE); "429" answers a rate limit
with `retry-after: 7`; "401" an authentication error; "529" (Messages) or "500" an overload; "unknown_model"
each API's own 404 for a model it does not serve, "entity_not_found" Google's other wording of it ("Requested entity
was not found."); "bad_key" Anthropic's 401 "invalid x-api-key". "agent_control"
(Messages) plays an agent that steers its iterations through its Bash tool: in iteration 1 it writes step.txt
and runs `awp agent-control progress` and `repeat`; later it writes final.txt and runs `finish`; once the tool's
result is back it ends its turn. "bash" does the same with the one command set on the server.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from local_servers import send_json, serving

REPLY = "Hello from the fake Messages API."
ERRORS = {"429": (429, "rate_limit_error", {"retry-after": "7"}),
          "401": (401, "authentication_error", {}),
          "529": (529, "overloaded_error", {}),
          "500": (500, "server_error", {})}


def _sse_events(events: list[tuple[str, dict]]) -> bytes:
    return "".join(f"event: {name}\ndata: {json.dumps(body)}\n\n" for name, body in events).encode()


def _responses_sse(model: str) -> bytes:
    item = {"id": "msg_1", "type": "message", "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "text": REPLY, "annotations": []}]}
    response = {"id": "resp_1", "object": "response", "model": model}
    return _sse_events([
        ("response.created", {"type": "response.created", "response": {**response, "status": "in_progress",
                                                                         "output": []}}),
        ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0,
                                        "item": {**item, "status": "in_progress", "content": []}}),
        ("response.output_text.delta", {"type": "response.output_text.delta", "item_id": "msg_1",
                                        "output_index": 0, "content_index": 0, "delta": REPLY}),
        ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
        ("response.completed", {"type": "response.completed", "response": {
            **response, "status": "completed", "output": [item],
            "usage": {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 40}, "output_tokens": 12,
                      "output_tokens_details": {"reasoning_tokens": 3}, "total_tokens": 112}}}),
    ])


def _gemini_sse(model: str) -> bytes:
    chunk = {"candidates": [{"content": {"parts": [{"text": REPLY}], "role": "model"}, "finishReason": "STOP",
                             "index": 0}],
             "usageMetadata": {"promptTokenCount": 20, "candidatesTokenCount": 8, "totalTokenCount": 28},
             "modelVersion": model}
    return f"data: {json.dumps(chunk)}\r\n\r\n".encode()


STEER = {
    1: "echo 1 > step.txt && awp agent-control progress --summary 'first pass done' && "
       "awp agent-control repeat --reason 'one more pass'",
    2: "echo 2 > step.txt && echo done > final.txt && awp agent-control finish --reason 'all done'",
}


def _tool_use_sse(model: str, command: str, tool_name: str = "Bash") -> bytes:
    """One assistant turn that calls the Bash tool (OpenCode's is `bash`) with `command`."""
    tool = {"type": "tool_use", "id": "toolu_fake_1", "name": tool_name, "input": {}}
    arguments = json.dumps({"command": command, "description": "Steer the next iteration"})
    return _turn_sse(model, "msg_fake_tool", (20, 30), tool, {"type": "input_json_delta", "partial_json": arguments},
                     "tool_use")


def _turn_sse(model: str, message_id: str, tokens: tuple[int, int], block: dict, delta: dict,
              stop_reason: str) -> bytes:
    """One assistant turn of one content block, as the Messages API streams it; `tokens`: (in, out)."""
    return _sse_events([
        ("message_start", {"type": "message_start", "message": {
            "id": message_id, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": tokens[0], "output_tokens": 1}}}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                           "usage": {"output_tokens": tokens[1]}}),
        ("message_stop", {"type": "message_stop"}),
    ])


def _steering(body: dict, model: str, command: str | None = None, tool_name: str = "Bash") -> bytes | None:
    """The agent_control scenario's answer to the main conversation (the request that offers tools): a Bash
    call until the tool's result is back, then the plain reply. None for the CLI's side requests. With
    `command` (the "bash" scenario), that command instead of the steering one."""
    messages = body.get("messages") or []
    if not body.get("tools") or not messages:
        return None
    last = messages[-1].get("content")
    if isinstance(last, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in last):
        return None
    iteration = 1 if "iteration 1 of at most" in json.dumps(messages) else 2
    return _tool_use_sse(model, command or STEER[iteration], tool_name)


def _sse(model: str) -> bytes:
    return _turn_sse(model, "msg_fake_1", (12, 9), {"type": "text", "text": ""}, {"type": "text_delta", "text": REPLY},
                     "end_turn")


class _Handler(BaseHTTPRequestHandler):
    server: FakeMessagesServer

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
        key = (self.headers.get("x-api-key") or self.headers.get("x-goog-api-key")
               or (self.headers.get("authorization") or "").removeprefix("Bearer "))
        self.server.requests.append((self.path, key, body.get("model")))
        self.server.bodies.append(body)
        gemini = ":streamGenerateContent" in self.path
        if not self.path.startswith(("/v1/messages", "/v1/responses")) and not gemini:
            self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": "not here"}})
            return
        scenario = self.server.scenario
        if scenario == "bad_key":  # Anthropic's own 401 for a key it does not know
            self._json(401, {"type": "error", "error": {"type": "authentication_error",
                                                        "message": "invalid x-api-key"}})
            return
        if scenario == "unknown_model":
            self._unknown_model(gemini, body.get("model") or self.path.split("/models/")[-1].split(":")[0])
            return
        if scenario == "entity_not_found":  # Google's own 404 for a model its endpoint does not know
            self._json(404, {"error": {"code": 404, "message": "Requested entity was not found.",
                                       "status": "NOT_FOUND"}})
            return
        if scenario in ERRORS:
            status, kind, headers = ERRORS[scenario]
            self._json(status, {"type": "error", "error": {"type": kind, "message": f"fake {kind}"}}, headers)
            return
        model = body.get("model") or "claude-haiku-4-5"
        if gemini:
            payload = _gemini_sse(self.path.split("/models/")[-1].split(":")[0])
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        elif self.path.startswith("/v1/messages/count_tokens"):
            self._json(200, {"input_tokens": 12})
        elif body.get("stream"):
            bash = self.server.command if scenario == "bash" else None
            steering = (_steering(body, model, bash, self.server.tool_name)
                        if scenario in ("agent_control", "bash") else None)
            payload = steering or (_responses_sse(model) if self.path.startswith("/v1/responses") else _sse(model))
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        else:
            self._json(200, {"id": "msg_fake_1", "type": "message", "role": "assistant", "model": model,
                             "content": [{"type": "text", "text": REPLY}], "stop_reason": "end_turn",
                             "stop_sequence": None, "usage": {"input_tokens": 12, "output_tokens": 9}})

    def _unknown_model(self, gemini: bool, model: str) -> None:
        """Each API's own 404 for a model it does not serve, as the real services word it."""
        if gemini:
            self._json(404, {"error": {"code": 404, "status": "NOT_FOUND", "message": f"models/{model} is not found "
                                       "for API version v1beta, or is not supported for generateContent."}})
        elif self.path.startswith("/v1/responses"):
            self._json(404, {"error": {"type": "invalid_request_error", "code": "model_not_found", "param": None,
                                       "message": f"The model `{model}` does not exist or you do not have access "
                                       "to it."}})
        else:
            self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": f"model: {model}"}})

    def _json(self, status: int, body: dict, headers: dict[str, str] | None = None) -> None:
        send_json(self, status, body, headers)


class FakeMessagesServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, scenario: str) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.scenario = scenario
        self.requests: list[tuple[str, str | None, str | None]] = []
        self.bodies: list[dict] = []  # each request's JSON body, in order (what the CLI sent the model)
        self.command: str | None = None  # the "bash" scenario's command for the agent's Bash tool
        self.tool_name = "Bash"  # OpenCode calls its own `bash`

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


@contextmanager
def fake_api(scenario: str) -> Iterator[FakeMessagesServer]:
    with serving(FakeMessagesServer(scenario)) as server:
        yield server
