"""A local Messages API that plays a scripted agent for the real Claude Code CLI: each turn of the main
conversation (the request that offers tools) answers with a message and one tool call, chosen by how many
tool results came back so far and whether the prompt is a repair. Side requests get a short text reply.

The first Attempt writes NOTES.md (Write, the secret it is given in it), edits it (Edit), then runs a shell
command (Bash) whose answer is held back `hold_s` seconds, so a page can be watched while the Attempt runs;
it never writes the line the contract asks for. The repair appends it with Bash. Every turn ends with a closing message.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "providers"))
from fake_apis import serving  # noqa: E402

FIRST_LINE = "Notes for the release."
EDITED_LINE = "Edited: the second line of the notes."
VERIFIED = "verified: yes"


def _script(workspace: Path, secret: str) -> dict[str, list[tuple[str, dict[str, Any] | None]]]:
    notes = str(workspace / "NOTES.md")
    return {
        "run": [
            ("I'll start the notes file.", {"name": "Write", "input": {
                "file_path": notes, "content": f"# Notes\n\n{FIRST_LINE}\n\ntoken: {secret}\n"}}),
            ("Now a second line.", {"name": "Edit", "input": {
                "file_path": notes, "old_string": FIRST_LINE, "new_string": f"{FIRST_LINE}\n{EDITED_LINE}"}}),
            ("Let me check what is in it.", {"name": "Bash", "input": {"command": "cat NOTES.md",
                                                                       "description": "Show the notes"}}),
            ("The notes are written.", None),
        ],
        "repair": [
            ("The verifier wants the verified line: adding it.", {"name": "Bash", "input": {
                "command": f"echo '{VERIFIED}' >> NOTES.md && tail -1 NOTES.md", "description": "Add the line"}}),
            ("Fixed: NOTES.md now says it is verified.", None),
        ],
    }


def _sse(events: list[tuple[str, dict[str, Any]]]) -> bytes:
    return "".join(f"event: {name}\ndata: {json.dumps(body)}\n\n" for name, body in events).encode()


def _turn(model: str, number: int, text: str, tool: dict[str, Any] | None) -> bytes:
    """One assistant turn: a text block, then (if any) a tool_use block."""
    events: list[tuple[str, dict[str, Any]]] = [("message_start", {"type": "message_start", "message": {
        "id": f"msg_page_{number}", "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 120, "output_tokens": 1}}})]
    blocks: list[tuple[dict[str, Any], dict[str, Any]]] = [
        ({"type": "text", "text": ""}, {"type": "text_delta", "text": text})]
    if tool is not None:
        blocks.append(({"type": "tool_use", "id": f"toolu_page_{number}", "name": tool["name"], "input": {}},
                       {"type": "input_json_delta", "partial_json": json.dumps(tool["input"])}))
    for index, (start, delta) in enumerate(blocks):
        events += [("content_block_start", {"type": "content_block_start", "index": index, "content_block": start}),
                   ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}),
                   ("content_block_stop", {"type": "content_block_stop", "index": index})]
    events += [("message_delta", {"type": "message_delta", "delta": {
        "stop_reason": "tool_use" if tool else "end_turn", "stop_sequence": None}, "usage": {"output_tokens": 40}}),
        ("message_stop", {"type": "message_stop"})]
    return _sse(events)


class _Handler(BaseHTTPRequestHandler):
    server: ScriptedAgentServer

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
        model = body.get("model") or "claude-haiku-4-5"
        if self.path.startswith("/v1/messages/count_tokens"):
            return self._send("application/json", json.dumps({"input_tokens": 12}).encode())
        messages = body.get("messages") or []
        if not body.get("tools") or not messages:
            return self._send("text/event-stream", _turn(model, 0, "ok", None))
        text = json.dumps(messages)
        results = text.count('"tool_result"')
        script = self.server.script["repair" if "Repair Instructions" in text else "run"]
        said, tool = script[min(results, len(script) - 1)]
        if tool is not None and tool["name"] == "Bash" and "Repair Instructions" not in text:
            self.server.holding.set()
            time.sleep(self.server.hold_s)  # the Attempt runs on: its page is watched meanwhile
        self.server.turns.append(tool["name"] if tool else "end")
        self._send("text/event-stream", _turn(model, results + 1, said, tool))

    def _send(self, kind: str, payload: bytes) -> None:
        self.send_response(200)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


class ScriptedAgentServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, workspace: Path, hold_s: float, secret: str) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.script = _script(workspace, secret)
        self.hold_s = hold_s
        self.holding = threading.Event()  # set once the Bash turn is being held back
        self.turns: list[str] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


@contextmanager
def scripted_agent(workspace: Path, secret: str, hold_s: float = 12.0) -> Iterator[ScriptedAgentServer]:
    """`secret`: a credential the agent writes into the notes (what no page or stored diff may show)."""
    with serving(ScriptedAgentServer(workspace, hold_s, secret)) as server:
        yield server
