"""Amp (npm `@sourcegraph/amp`, now `@ampcode/cli`): `amp -x PROMPT --stream-json`; resume with
`amp threads continue ID -x "Continue" --stream-json`.

Events: Claude Code's stream JSON (its `--stream-json` says so: system/init, assistant, user, result), read by Claude
Code's parser. `-m` is Amp's agent mode (low, medium, high, ultra): the mode chooses the model, so a target's model is
its mode. Its key is `AMP_API_KEY`, its server `AMP_URL` (a base_url), its settings under `XDG_CONFIG_HOME/amp/`
(an account's config folder).

Amp's own refusals come before any event, on stderr (its login flow's lines on stdout): with no key it starts an
interactive login and waits for a code (`No API key found. Starting login flow...`), stopped at once; a key its server
refuses is `Invalid or missing API key. Run 'amp login' to authenticate.`; an unreachable server `Couldn't connect to
the Amp server at URL.` Its server's answers when it creates the session's thread (a 429, a 503) reach stderr only as
`Unexpected error inside Amp CLI.`: its log file (AMP_LOG_FILE, one per session) names them
(`ThreadClientConnectionError: Failed to create thread-actors thread: 429 …`), read when the session ends.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

from awp_pipelines.core.providers.base import ProviderRequest
from awp_pipelines.core.providers.classify import class_of_error, envelope, local_refusal, status_in_text
from awp_pipelines.core.providers.claude_code import ClaudeStreamParser
from awp_pipelines.core.providers.cli import CliAdapter, flag
from awp_pipelines.core.providers.process import STOP, ProcessResult
from awp_pipelines.core.records.events import EventSink
from awp_pipelines.core.records.failures import FailureClass, FailureEnvelope

MODES = ("low", "medium", "high", "ultra")
EFFORT_MODES = {"minimal": "low", "low": "low", "medium": "medium", "high": "high", "xhigh": "ultra", "max": "ultra"}
LOG_FILE_ENV = "AMP_LOG_FILE"
# Its stderr before any event: (pattern, class). A login flow waits for a person: stopped at once.
_REFUSALS: tuple[tuple[re.Pattern[str], FailureClass], ...] = (
    (re.compile(r"No API key found\. Starting login flow"), "provider_auth_claim"),
    (re.compile(r"Invalid or missing API key"), "provider_auth_claim"),
    (re.compile(r"Couldn't connect to the Amp server"), "transport_disconnect"),
)
_THREAD_FAILED = re.compile(r"Failed to create thread-actors thread: (\d{3})")


class AmpStreamParser(ClaudeStreamParser):
    log_file: Path | None = None  # this session's log file (AmpAdapter sets it)

    def feed(self, line: str) -> object:
        """Its events on stdout; its login flow's lines too (not JSON), before it waits for a code."""
        if not line.lstrip().startswith("{") and self._refusal(line) is STOP:
            return STOP
        return super().feed(line)

    def feed_stderr(self, line: str) -> object:
        return self._refusal(line)

    def _refusal(self, line: str) -> object:
        for pattern, cls in _REFUSALS:
            if pattern.search(line):
                self.last_error = line.strip().removeprefix("Error: ")[:500]
                self.sink.error(self.last_error, source="stderr")
                # "Invalid or missing API key" and the login flow: a login refused, the same on every try.
                name = "authentication_error" if cls == "provider_auth_claim" else None
                self.fail(envelope(cls, f"Amp: {self.last_error}", code="amp_stderr", now=self.now(), name=name))
                return STOP
        return None

    def exit_failure(self, result: ProcessResult) -> FailureEnvelope | None:
        """No event and no known refusal: what its log file names (a thread its server would not create)."""
        logged = None if local_refusal(result.stderr_tail) else self._logged_error()
        if logged is None:  # a flag it refused ("error: unknown option '--x'"), or nothing logged
            return super().exit_failure(result)
        status = status_in_text(logged) or _thread_status(logged)
        cls = class_of_error(None, status, logged)
        self.last_error = logged
        return envelope(cls, f"exit {result.exit_code}: Amp: {logged}", code=f"amp_{status or 'log'}", now=self.now())

    def _logged_error(self) -> str | None:
        """What this session's log file (JSON lines) says went wrong: the thread its server would not create (logged
        as a warning before each of its own retries), else its last ERROR; the error's name and message."""
        try:
            lines = self.log_file.read_text(encoding="utf-8", errors="replace").splitlines() if self.log_file else []
        except OSError:
            return None
        errors: list[str] = []
        for line in lines[-2000:]:
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if not isinstance(entry, dict) or entry.get("level") not in ("ERROR", "WARN"):
                continue
            error = entry["error"] if isinstance(entry.get("error"), dict) else {}
            name, message = str(error.get("name") or ""), str(error.get("message") or entry.get("message") or "")
            said = f"{name}: {message}" if name else message
            if _THREAD_FAILED.search(said):
                return said
            if entry.get("level") == "ERROR":
                errors.append(said)
        return errors[-1] if errors else None


def _thread_status(text: str) -> int | None:
    match = _THREAD_FAILED.search(text)
    return int(match.group(1)) if match else None


class AmpAdapter(CliAdapter):
    kind: ClassVar[str] = "amp"
    default_command: ClassVar[str] = "amp"
    parser_class = AmpStreamParser

    def refusal(self, request: ProviderRequest, env: Mapping[str, str], executable: str) -> FailureEnvelope | None:
        """Its model is its mode: another word is refused before it starts (its server would decide, after a login)."""
        if request.model and request.model not in MODES:
            return FailureEnvelope.for_class(
                "provider_config_claim", f"Amp takes its agent mode as its model ({', '.join(MODES)}), not "
                f"'{request.model}' (not retried: set the target's model to a mode)", provider_code="amp_mode",
                deterministic=True)
        return super().refusal(request, env, executable)

    def argv(self, request: ProviderRequest, resume: bool = False) -> list[str]:
        mode = request.model if request.model in MODES else EFFORT_MODES.get(request.effort or "")
        if resume and request.session_id:
            return [self.command, "threads", "continue", request.session_id, "-x", request.prompt_text,
                    "--stream-json", *flag("-m", mode)]
        return [self.command, "-x", request.prompt_text, "--stream-json", "--no-notifications", "--no-ide",
                *flag("-m", mode)]

    def extra_env(self, request: ProviderRequest) -> dict[str, str]:
        """A log file of its own per session, in the agent's HOME: the only place Amp names its server's refusals."""
        home = request.home
        if home is None:
            return {}
        folder = Path(home) / ".cache" / "amp" / "awp-sessions"
        folder.mkdir(parents=True, exist_ok=True)
        return {LOG_FILE_ENV: str(folder / f"{request.attempt_number or 0}-{request.mode or 'run'}.log")}

    def new_parser(self, sink: EventSink, env: dict[str, str]) -> AmpStreamParser:
        parser = AmpStreamParser(sink)
        log = env.get(LOG_FILE_ENV)
        if log:
            Path(log).unlink(missing_ok=True)  # this session's lines only
            parser.log_file = Path(log)
        return parser
