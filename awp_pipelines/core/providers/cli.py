"""What the CLI adapters share: a session is one subprocess whose JSON lines a parser turns into events.

Each kind supplies its argv and a `StreamParser` subclass. The parser writes the normalised events
through the sink as lines arrive and keeps the verdict; the exit code is only weak evidence (Claude and
Codex exit 0 on some API errors), so the parser's findings come first.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, ClassVar

from awp_pipelines.core.isolation.bwrap import SANDBOX_UID
from awp_pipelines.core.packet.bounds import stream_idle_ms
from awp_pipelines.core.packet.providers_config import ProviderSpec
from awp_pipelines.core.providers.base import ProviderOutcome, ProviderRequest
from awp_pipelines.core.providers.classify import class_of_text, envelope, local_refusal
from awp_pipelines.core.providers.environment import agent_env, credential_var
from awp_pipelines.core.providers.process import ProcessResult, run_streaming
from awp_pipelines.core.providers.sandbox import configured_env, root_refusal
from awp_pipelines.core.records import jsonl
from awp_pipelines.core.records.events import EventSink
from awp_pipelines.core.records.failures import FailureEnvelope
from awp_pipelines.core.records.redact import redact

PROMPT_PLACEHOLDER = "<prompt>"
_MAX_NOISE_EVENTS = 20  # non-JSON stdout lines recorded; the rest are only counted


def flag(name: str, value: object, mapping: Mapping[str, str] | None = None) -> list[str]:
    """`[name, value]` for a set value (through the CLI's own vocabulary in `mapping`), else nothing."""
    if value is None or value == "" or value == ():
        return []
    text = ",".join(value) if isinstance(value, tuple | list) else str(value)
    return [name, mapping.get(text, text) if mapping else text]


class StreamParser:
    """One session's state: the session id, the decisive failure, whether a final result arrived."""

    def __init__(self, sink: EventSink, now: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.sink = sink
        self.now = now
        self.session_id: str | None = None
        self.failure: FailureEnvelope | None = None
        self.completed = False
        self.last_error: str | None = None
        self.noise = 0

    def feed(self, line: str) -> object:
        """One stdout line; returns STOP to end the session now."""
        try:
            event = jsonl.loads(line)
        except ValueError:  # not JSON (json.JSONDecodeError is a ValueError)
            event = None
        if not isinstance(event, dict):
            self.noise += 1
            if self.noise <= _MAX_NOISE_EVENTS:
                self.sink.error(line[:2000], source="stdout")
            return None
        return self.handle(event)

    def handle(self, event: dict[str, Any]) -> object:
        raise NotImplementedError

    def feed_stderr(self, line: str) -> object:
        """One stderr line; most CLIs say nothing there that decides anything."""
        return None

    def start_session(self, session_id: Any, **info: Any) -> None:
        if session_id and session_id != self.session_id:
            self.session_id = str(session_id)
            self.sink.session_started(self.session_id, **{k: v for k, v in info.items() if v is not None})

    def fail(self, failure: FailureEnvelope) -> None:
        """Keep the first decisive failure: later ones are its consequences."""
        if self.failure is None:
            self.failure = failure

    def finish(self, result: ProcessResult) -> FailureEnvelope | None:
        if result.ended == "launch_failed":
            return FailureEnvelope.for_class("launch_failed", result.launch_error or "could not start the CLI",
                                             provider_code="launch_failed")
        if result.ended in ("idle", "deadline"):
            if self.failure is not None:
                return self.failure
            what = "no event" if result.ended == "idle" else "the wall-clock deadline passed"
            return FailureEnvelope.for_class(
                "transport_timeout", f"{what} after {result.elapsed_ms} ms; the process group was killed"
                + (f" (last error: {self.last_error})" if self.last_error else ""), provider_code=result.ended)
        if self.failure is not None:
            return self.failure
        if self.completed and result.exit_code in (0, None):
            return None
        return self.exit_failure(result)

    def exit_failure(self, result: ProcessResult) -> FailureEnvelope | None:
        """No decisive event: the exit code and stderr are all there is."""
        detail = (self.last_error or result.stderr_tail.strip()[-1500:] or "").strip()
        if result.exit_code == 0:
            if self.completed:
                return None
            return FailureEnvelope.for_class("protocol_error", "the CLI exited 0 without a final result event"
                                             + (f": {detail}" if detail else ""), provider_code="no_result")
        # Refused before any session started (a flag, a permission mode as root): the same every time, and a
        # refusal of its configuration whatever else the text says.
        deterministic = self.session_id is None and local_refusal(detail)
        cls = "provider_config_claim" if deterministic else class_of_text(detail, default="provider_runtime_claim")
        fix = " (not retried: the CLI refused its own arguments or settings; `awp plan` shows its argv)" \
            if deterministic else ""
        return envelope(cls, f"exit {result.exit_code}: {detail or 'no output'}{fix}", code=f"exit_{result.exit_code}",
                        now=self.now(), deterministic=deterministic)


class CliAdapter:
    """A `ProviderAdapter` for a headless CLI; subclasses give the argv and the parser."""

    kind: ClassVar[str] = ""
    default_command: ClassVar[str] = ""
    parser_class: ClassVar[type[StreamParser]] = StreamParser

    def __init__(self, spec: ProviderSpec, name: str | None = None) -> None:
        self.spec = spec
        self.name = name or self.kind

    @property
    def command(self) -> str:
        return self.spec.command or self.default_command

    # -- what subclasses say -----------------------------------------------------------------------------
    def argv(self, request: ProviderRequest, resume: bool = False) -> list[str]:
        raise NotImplementedError

    def stdin_text(self, request: ProviderRequest) -> str | None:
        return None

    def extra_env(self, request: ProviderRequest) -> dict[str, str]:
        return {}

    def reported_model(self, env: Mapping[str, str], session_id: str | None) -> str | None:
        """The model the CLI ran, where its events do not say (read after the session); None: unknown."""
        return None

    def prepare(self, request: ProviderRequest, env: dict[str, str]) -> None:
        """Set up what the CLI needs before it starts (e.g. a settings file in the account's config dir)."""

    def new_parser(self, sink: EventSink, env: dict[str, str]) -> StreamParser:
        """The session's parser; `env` is the CLI's (a parser may read what the CLI writes where it says)."""
        return self.parser_class(sink)

    # -- shared --------------------------------------------------------------------------------------------
    def env(self, request: ProviderRequest) -> dict[str, str]:
        return {**agent_env(self.kind, self.spec, request.account, request.env, home=request.home,
                            tools=request.tools),
                **configured_env(self.spec, request.account), **self.extra_env(request)}

    def refusal(self, request: ProviderRequest, env: Mapping[str, str], executable: str) -> FailureEnvelope | None:
        """A refusal known before the CLI starts (its `executable` is not there; root + a permission mode it
        refuses): deterministic, one Attempt. A missing CLI in the sandbox exited 127 through the egress, which
        read as a runtime claim: `--skip-preflight` retried it three times."""
        if shutil.which(executable, path=env.get("PATH")) is None:
            return FailureEnvelope.for_class(
                "launch_failed", f"the agent CLI `{executable}` is not on PATH (not retried: install it, or set the "
                "provider's `command:` in providers.yaml; `awp doctor` checks it)", provider_code="cli_missing",
                deterministic=True)
        found = root_refusal(self.kind, request.permission_mode, env, provider=self.name,
                             account=request.account.name if request.account else None,
                             euid=SANDBOX_UID if request.sandbox is not None else None)
        if found is None:
            return None
        return FailureEnvelope.for_class("provider_config_claim", f"{found.detail}; {found.fix}",
                                         provider_code="root_permission_mode", deterministic=True)

    def display_argv(self, request: ProviderRequest, resume: bool = False) -> list[str]:
        """The argv with the prompt as a placeholder and every secret masked (for plans and events)."""
        argv = self.argv(replace(request, prompt_text=PROMPT_PLACEHOLDER), resume)
        return [redact(a, self._secrets(request)) for a in argv]

    def _secrets(self, request: ProviderRequest) -> list[str]:
        var = credential_var(self.spec, request.account)
        env = request.env
        names = {var, request.account.credential_env if request.account else None}
        return [env[n] for n in names if n and env.get(n)]

    def run(self, request: ProviderRequest, sink: EventSink) -> ProviderOutcome:
        return self._session(request, sink, resume=False)

    def resume(self, request: ProviderRequest, sink: EventSink) -> ProviderOutcome:
        if not request.session_id:
            failure = FailureEnvelope.for_class("transport_disconnect", "no provider session id to resume",
                                                provider_code="no_session")
            sink.run_failed(failure)
            return ProviderOutcome.from_sink(sink, failure, None)
        return self._session(request, sink, resume=True)

    def _session(self, request: ProviderRequest, sink: EventSink, resume: bool) -> ProviderOutcome:
        env = self.env(request)
        self.prepare(request, env)
        argv = self.argv(request, resume)
        idle_ms = request.idle_timeout_ms or stream_idle_ms(request.timeout_ms)
        # The bounds this session enforces, on record: what is left of the Attempt's deadline, and the idle bound.
        sink.run_started(provider=self.name, kind=self.kind, model=request.model, mode=request.mode,
                         account=request.account.name if request.account else None,
                         attempt_number=request.attempt_number, argv=self.display_argv(request, resume),
                         deadline_ms=request.timeout_ms, idle_ms=idle_ms)
        refused = self.refusal(request, env, argv[0])
        if refused is not None:  # the CLI would exit at once, the same way every time: do not start it
            sink.run_failed(refused, ended="refused")
            return ProviderOutcome.from_sink(sink, refused, request.session_id)
        if request.sandbox is not None:  # provisioned by the Attempt: the same session, inside bubblewrap
            argv, env = request.sandbox.command(argv, request.cwd), request.sandbox.environment(env)
        parser = self.new_parser(sink, env)
        with sink.batch():  # the events of each chunk read reach the file together
            result = run_streaming(argv, cwd=request.cwd, env=env, on_line=parser.feed,
                                   deadline_ms=request.timeout_ms, idle_ms=idle_ms,
                                   stdin_text=self.stdin_text(request), on_stderr=parser.feed_stderr,
                                   on_chunk=sink.flush, interrupt=request.steer_waiting)
        # Ended for a person's steer (not for anything the CLI said): a clean end, the engine resumes it with the steer.
        steered = result.ended == "stopped" and parser.failure is None and request.steer_waiting is not None \
            and request.steer_waiting()
        failure = None if steered else parser.finish(result)
        session_id = parser.session_id or request.session_id
        ended = {"exit_code": result.exit_code, "ended": "steered" if steered else result.ended,
                 "elapsed_ms": result.elapsed_ms, "pgid": result.pgid}
        if failure is not None:
            sink.run_failed(failure, **ended)
        else:
            sink.run_completed(session_id=session_id, **ended)
        return ProviderOutcome.from_sink(sink, failure, session_id, reported_model=self.reported_model(env, session_id))
