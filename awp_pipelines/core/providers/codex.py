"""Codex: `codex exec --json ... -` (prompt on stdin); resume with `codex exec ... resume ID -`.

Events (reference/agent-clis.md): thread.started, turn.started, item.started|updated|completed,
turn.completed (usage, no cost), turn.failed, error. `turn.failed` can come with exit 0, and offline
Codex prints `error` events ("Reconnecting... 2/5") and then waits for the network forever: those
errors are notices, and the Attempt's deadline ends the wait. A rate limit or an auth refusal in those
errors is decisive: the session stops at the first one.

Agent control: its shell tool inherits the session's environment (environment.agent_env): the control
channel and an `awp` first on PATH. The control files live in the packet's state folder, outside the work
tree: Codex's workspace-write sandbox may refuse to write them, so steer under a mode that allows it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from awp_pipelines.core.providers.base import ProviderRequest
from awp_pipelines.core.providers.classify import (
    class_of_error,
    envelope,
    error_name,
    status_in_text,
    status_name,
)
from awp_pipelines.core.providers.cli import CliAdapter, StreamParser, flag
from awp_pipelines.core.providers.process import STOP
from awp_pipelines.core.records import jsonl

SANDBOX = {"default": ["--sandbox", "workspace-write"], "auto": ["--sandbox", "workspace-write"],
           "plan": ["--sandbox", "read-only"], "bypass": ["--dangerously-bypass-approvals-and-sandbox"]}
EFFORTS = {"minimal": "minimal", "low": "low", "medium": "medium", "high": "high", "xhigh": "xhigh", "max": "xhigh"}
PROVIDER_ID = "awp"  # the model_providers entry AWP adds when a base_url is configured
_DECISIVE = ("provider_rate_limit", "provider_auth_claim")
_MAX_OVERLOADS = 2  # an overload may pass: one reconnect is let through, the second ends the session


class CodexStreamParser(StreamParser):
    overloads = 0
    def handle(self, event: dict[str, Any]) -> object:
        kind = str(event.get("type") or "")
        if kind == "thread.started":
            self.start_session(event.get("thread_id"))
        elif kind.startswith("item."):
            self._item(kind, event.get("item") or {})
        elif kind == "turn.completed":
            usage = event.get("usage") or {}
            cached = int(usage.get("cached_input_tokens") or 0)
            # Codex reports the thread's running totals (a resumed thread counts its earlier turns too), and
            # an Attempt only ever continues its own thread: so these are the Attempt's totals.
            self.sink.usage(input_tokens=max(0, int(usage.get("input_tokens") or 0) - cached),
                            output_tokens=int(usage.get("output_tokens") or 0), cached_input_tokens=cached,
                            reasoning_tokens=int(usage.get("reasoning_output_tokens") or 0), cumulative=True)
            self.completed = True
        elif kind == "turn.failed":
            message = str((event.get("error") or {}).get("message") or "turn failed")
            self.last_error = message
            # Codex passes on the API's body (its `code`: `model_not_found`) or states the status in its words.
            status = status_in_text(message)
            name = error_name(message) or status_name(status)
            self.fail(envelope(class_of_error(name, status, message), message, code="turn.failed", now=self.now(),
                               name=name))
        elif kind == "error":
            message = str(event.get("message") or "error")
            self.last_error = message
            status = status_in_text(message)  # "Reconnecting... 1/5 (unexpected status 401 Unauthorized: …)"
            name = error_name(message) or status_name(status)
            cls = class_of_error(name, status, message, "transport_disconnect")
            if cls == "provider_rate_limit":
                self.sink.rate_limit_notice(status="retrying" if message.startswith("Reconnecting") else "rejected",
                                            error=message)
            else:
                self.sink.error(message)
            if cls == "provider_capacity":
                self.overloads += 1
            failure = envelope(cls, message, code="error", now=self.now(), name=name)
            if cls in _DECISIVE or failure.local_deterministic or self.overloads >= _MAX_OVERLOADS:
                # "Reconnecting... 1/5 (... 429 Too Many Requests)": Codex would reconnect five times (each
                # with retries of its own, for half a minute) and change nothing; act on the first one (a 404, a
                # refusal that says the same every time, as well).
                self.fail(failure)
                return STOP
        return None

    def _item(self, kind: str, item: dict[str, Any]) -> None:
        itype = item.get("type")
        done = kind == "item.completed"
        call = item.get("id")
        if itype == "agent_message" and done:
            self.sink.message(str(item.get("text") or ""))
        elif itype == "reasoning" and done:
            self.sink.thinking(str(item.get("text") or ""))
        elif itype == "command_execution":
            if kind == "item.started":
                self.sink.tool_call_started("shell", {"command": item.get("command")}, call)
            elif done and (item.get("status") == "failed" or item.get("exit_code") not in (0, None)):
                self.sink.tool_call_failed("shell", str(item.get("aggregated_output") or item.get("exit_code")), call)
            elif done:
                self.sink.tool_call_completed("shell", item.get("aggregated_output"), call)
        elif itype in ("file_change", "mcp_tool_call", "web_search") and done:
            name = f"{item.get('server')}.{item.get('tool')}" if itype == "mcp_tool_call" else itype
            detail = item.get("changes") or item.get("query") or item.get("arguments")
            self.sink.tool_call_started(name, detail, call)
            if item.get("status") == "failed":
                self.sink.tool_call_failed(name, str(item.get("error") or "failed"), call)
            else:
                self.sink.tool_call_completed(name, item.get("result") or item.get("status"), call)
        elif itype == "error" and done:
            self.last_error = str(item.get("message") or "error")
            self.sink.error(self.last_error)


class CodexAdapter(CliAdapter):
    kind: ClassVar[str] = "codex"
    default_command: ClassVar[str] = "codex"
    parser_class = CodexStreamParser

    def argv(self, request: ProviderRequest, resume: bool = False) -> list[str]:
        effort = f"model_reasoning_effort={EFFORTS.get(request.effort, request.effort)}" if request.effort else None
        argv = [self.command, "exec", "--json", "--skip-git-repo-check", *flag("-m", request.model),
                *flag("-c", effort), *SANDBOX.get(request.permission_mode or "default", SANDBOX["default"])]
        base_url = (request.account.base_url if request.account else None) or self.spec.base_url
        if base_url:
            # Codex ignores OPENAI_BASE_URL: a local or gateway endpoint needs a model_providers entry.
            key = self.spec.credential_env or "OPENAI_API_KEY"
            argv += ["-c", f'model_provider="{PROVIDER_ID}"',
                     "-c", f'model_providers.{PROVIDER_ID}.name="{PROVIDER_ID}"',
                     "-c", f'model_providers.{PROVIDER_ID}.base_url="{base_url}"',
                     "-c", f'model_providers.{PROVIDER_ID}.env_key="{key}"']
        if resume and request.session_id:
            argv += ["resume", request.session_id]
        return [*argv, "-"]

    def stdin_text(self, request: ProviderRequest) -> str | None:
        return request.prompt_text

    def reported_model(self, env: Mapping[str, str], session_id: str | None) -> str | None:
        """Codex's JSON events name no model; its own session file (CODEX_HOME/sessions/…/rollout-…-<thread>.jsonl)
        does, in each turn's `turn_context`: the last one is the model the CLI ran."""
        home = env.get(self.spec.config_dir_env or "CODEX_HOME") or (
            str(Path(env["HOME"]) / ".codex") if env.get("HOME") else None)
        if not home or not session_id:
            return None
        model = None
        for rollout in sorted(Path(home, "sessions").glob(f"*/*/*/rollout-*{session_id}.jsonl")):
            with rollout.open(encoding="utf-8", errors="replace") as fh:
                for line in fh:
                    if '"turn_context"' not in line:  # the file holds the whole conversation: parse little
                        continue
                    try:
                        entry = jsonl.loads(line)
                    except ValueError:
                        continue
                    payload = entry.get("payload") if isinstance(entry, dict) else None
                    if entry.get("type") == "turn_context" and isinstance(payload, dict) and payload.get("model"):
                        model = str(payload["model"])
        return model
