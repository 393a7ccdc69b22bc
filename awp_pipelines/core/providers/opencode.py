"""OpenCode: `opencode run --format json -m provider/model PROMPT`; resume with `-s ID`.

Events: JSON lines {type, timestamp, sessionID, part}: step_start, text, reasoning, tool_use,
step_finish (cost and tokens), error. On a 429 or an exhausted quota OpenCode retries in silence, for
ever (#8203): stdout says nothing. The adapter asks for its error log on stderr (`--print-logs
--log-level ERROR`), where each failed try shows as a "stream error"; a rate limit or auth refusal there
ends the session at once, an overload at the second. Otherwise the Attempt's deadline ends the wait.

Agent control: its bash tool inherits the session's environment (environment.agent_env): the control
channel and an `awp` first on PATH.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Mapping
from contextlib import closing
from pathlib import Path
from typing import Any, ClassVar

from awp_pipelines.core.providers.base import ProviderRequest
from awp_pipelines.core.providers.classify import class_of_error, envelope, error_name, status_name
from awp_pipelines.core.providers.cli import CliAdapter, StreamParser, flag
from awp_pipelines.core.providers.process import STOP

_STREAM_ERROR = re.compile(r'message="stream error".*?error\.error="([^"]*)"')
_MAX_OVERLOADS = 2
VARIANTS = {"minimal": "minimal", "low": "low", "medium": "medium", "high": "high", "xhigh": "max", "max": "max"}


class OpenCodeStreamParser(StreamParser):
    overloads = 0

    def feed_stderr(self, line: str) -> object:
        match = _STREAM_ERROR.search(line)
        if match is None:
            return None
        message = match.group(1)
        self.last_error = message
        name = error_name(message)  # the AI SDK's error leads the line: `AI_LoadAPIKeyError: … API key is missing`
        cls = class_of_error(name, None, message)
        if cls == "provider_rate_limit":
            self.sink.rate_limit_notice(status="retrying", error=message)
        else:
            self.sink.error(message, source="stderr")
        self.overloads += cls == "provider_capacity"
        if cls in ("provider_rate_limit", "provider_auth_claim") or self.overloads >= _MAX_OVERLOADS:
            self.fail(envelope(cls, f"OpenCode stream error: {message}", code="stream_error", now=self.now(),
                               name=name))
            return STOP
        return None

    def handle(self, event: dict[str, Any]) -> object:
        kind = event.get("type")
        part = event.get("part") or {}
        self.start_session(event.get("sessionID") or part.get("sessionID"))
        if kind == "text" and part.get("text"):
            self.sink.message(str(part["text"]))
        elif kind == "reasoning" and part.get("text"):
            self.sink.thinking(str(part["text"]))
        elif kind == "tool_use":
            state = part.get("state") or {}
            name, call = str(part.get("tool") or "tool"), part.get("callID") or part.get("id")
            self.sink.tool_call_started(name, state.get("input"), call)
            if state.get("status") == "error":
                self.sink.tool_call_failed(name, str(state.get("error") or "failed"), call)
            else:
                self.sink.tool_call_completed(name, state.get("output"), call)
        elif kind == "step_finish":
            tokens = part.get("tokens") or {}
            cache = tokens.get("cache") or {}
            cost = part.get("cost")
            self.sink.usage(input_tokens=int(tokens.get("input") or 0) + int(cache.get("write") or 0),
                            # OpenCode counts reasoning apart; normalised output includes it.
                            output_tokens=int(tokens.get("output") or 0) + int(tokens.get("reasoning") or 0),
                            cached_input_tokens=int(cache.get("read") or 0),
                            reasoning_tokens=int(tokens.get("reasoning") or 0),
                            cost_usd=float(cost or 0.0), cost_reported=cost is not None)
            self.completed = True
        elif kind == "error":
            error = event.get("error") or {}
            data = error.get("data") or {}
            message = str(data.get("message") or error.get("message") or error.get("name") or "error")
            status = data.get("statusCode")
            named = error.get("name")
            self.last_error = message
            self.sink.error(message, name=named, status=status)
            # Its NamedError first (`ProviderAuthError`: "… API key is missing …", no status, no telling text),
            # then the API's status, then the text.
            cls = class_of_error(named, status, message)
            self.fail(envelope(cls, message, code=str(named or status or "error"), now=self.now(),
                               name=status_name(status) if named in (None, "APIError") else None))
        return None


class OpenCodeAdapter(CliAdapter):
    kind: ClassVar[str] = "opencode"
    default_command: ClassVar[str] = "opencode"
    parser_class = OpenCodeStreamParser

    def argv(self, request: ProviderRequest, resume: bool = False) -> list[str]:
        argv = [self.command, "run", "--format", "json", "--print-logs", "--log-level", "ERROR",
                *flag("-m", request.model),
                *flag("--variant", request.effort, VARIANTS)]
        if resume and request.session_id:
            argv += ["-s", request.session_id]
        return [*argv, request.prompt_text]

    def reported_model(self, env: Mapping[str, str], session_id: str | None) -> str | None:
        """OpenCode's JSON lines name no model; its own database does, on each assistant message of the
        session ($XDG_DATA_HOME/opencode/opencode.db, `providerID`/`modelID`): the last is the model it ran."""
        data = env.get("XDG_DATA_HOME") or (str(Path(env["HOME"]) / ".local" / "share") if env.get("HOME") else None)
        database = Path(data, "opencode", "opencode.db") if data else None
        if database is None or not session_id or not database.is_file():
            return None
        try:
            with closing(sqlite3.connect(f"{database.as_uri()}?mode=ro", uri=True, timeout=2)) as db:
                rows = db.execute("SELECT data FROM message WHERE session_id = ? ORDER BY time_created",
                                  (session_id,)).fetchall()
        except sqlite3.Error:
            return None  # another OpenCode version's layout: no report, which cli_confirmation says
        model = None
        for (text,) in rows:
            try:
                message = json.loads(text)
            except ValueError:
                continue
            if isinstance(message, dict) and message.get("role") == "assistant" and message.get("modelID"):
                provider = message.get("providerID")
                model = f"{provider}/{message['modelID']}" if provider else str(message["modelID"])
        return model

    def extra_env(self, request: ProviderRequest) -> dict[str, str]:
        base_url = (request.account.base_url if request.account else None) or self.spec.base_url
        if not base_url or not request.model or "/" not in request.model:
            return {}
        # The model's provider (`opencode/...`, `openrouter/...`) gets the configured endpoint.
        provider = request.model.split("/", 1)[0]
        return {"OPENCODE_CONFIG_CONTENT": json.dumps({"provider": {provider: {"options": {"baseURL": base_url}}}})}
