"""Prompt Runner's built-in simulated provider: plays a prompt's `simulate:` script, deterministically.

`attempts[n-1]` drives Attempt n (run, retry, fallback or repair alike); `resume` drives a session resume.
A step emits its messages, makes its tool calls, applies its file writes (each a Write or Edit tool call, as a
real agent's), then ends ok or with its error as a FailureEnvelope.
It only produces events and file side effects; the verifier still decides completion.

Agent control: a step's `control:` makes the request `awp agent-control` would, from the session's
environment (request.env carries the control channel).
"""

from __future__ import annotations

import time

from awp_pipelines.core.decisions.agent_control import ENV_ITERATION, ControlError, make_request, record_progress
from awp_pipelines.core.packet.model.simulate import SimulatedControl, SimulatedStep, SimulatedWrite
from awp_pipelines.core.providers.base import RESUME_PROMPT, ProviderOutcome, ProviderRequest
from awp_pipelines.core.records.events import EventSink
from awp_pipelines.core.records.failures import FailureEnvelope

PROVIDER = "simulated"
DEFAULT_MODEL = "simulated-demo"


class WriteRefused(Exception):
    """A scripted write the sandbox will not make: outside its repo, or into a repo the request lacks."""


def _session_id(request: ProviderRequest) -> str:
    return f"sim-{request.attempt_number}"


def _words(text: str) -> int:
    return len(text.split())


class SimulatedProvider:
    """A `ProviderAdapter` without a model: no clock, no randomness, no network."""

    kind = PROVIDER

    def run(self, request: ProviderRequest, sink: EventSink) -> ProviderOutcome:
        spec = request.simulate
        session_id = _session_id(request)
        sink.run_started(provider=PROVIDER, model=request.model or DEFAULT_MODEL, mode=request.mode,
                         session_id=session_id, attempt_number=request.attempt_number)
        steps = spec.attempts if spec is not None else []
        if request.attempt_number > len(steps):
            step = SimulatedStep(messages=[f"Simulated provider: no scripted step for attempt "
                                           f"{request.attempt_number} (the script has {len(steps)}); "
                                           "nothing done, the verifier decides."])
        else:
            step = steps[request.attempt_number - 1]
        return self._play(step, request.prompt_text, request, sink, session_id)

    def resume(self, request: ProviderRequest, sink: EventSink) -> ProviderOutcome:
        session_id = request.session_id or _session_id(request)
        step = request.simulate.resume if request.simulate is not None else None
        if step is None:
            failure = FailureEnvelope.for_class("transport_disconnect",
                                                f"simulated session {session_id}: no resume step in the script",
                                                provider_code="no_resume_step")
            sink.run_failed(failure)
            return ProviderOutcome.from_sink(sink, failure, session_id)
        return self._play(step, RESUME_PROMPT, request, sink, session_id)

    def _play(self, step: SimulatedStep, prompt: str, request: ProviderRequest, sink: EventSink,
              session_id: str) -> ProviderOutcome:
        for text in step.messages:
            sink.message(text)
        if step.delay_ms and _wait(step.delay_ms, request):  # a person's steer ended the session early
            sink.run_completed(stop_reason="steered")
            return ProviderOutcome.from_sink(sink, None, session_id, [], request.model or DEFAULT_MODEL)
        # Deterministic stand-in telemetry: words in, words out, and the step's scripted cost (none: free).
        sink.usage(input_tokens=_words(prompt), output_tokens=sum(_words(t) for t in step.messages),
                   cost_usd=step.cost_usd or 0.0, cost_reported=True)  # a simulation says what it cost
        for n, tool in enumerate(step.tools, 1):
            sink.tool_call_started(tool.name, dict(tool.input), call_id=f"sim-{n}")
            sink.tool_call_completed(tool.name, tool.output, call_id=f"sim-{n}")
        changed: list[str] = []
        failure: FailureEnvelope | None = None
        for n, write in enumerate(step.writes, len(step.tools) + 1):
            name = "Edit" if write.append or _exists(write, request) else "Write"
            sink.tool_call_started(name, {"file_path": write.path, "content": write.text}, call_id=f"sim-{n}")
            try:
                repo, path = _apply_write(write, request)
            except WriteRefused as err:
                sink.tool_call_failed(name, str(err), call_id=f"sim-{n}")
                failure = FailureEnvelope.for_class("guardrail_blocked", str(err), provider_code="write_refused")
                break
            sink.tool_call_completed(name, f"wrote {write.path}", call_id=f"sim-{n}")
            sink.file_written(path, repo=repo)
            label = f"{repo}:{path}" if repo else path
            if label not in changed:
                changed.append(label)
        if failure is None and step.control is not None:
            _steer(step.control, request, sink)
        if failure is None and step.error is not None:
            kind = step.error.kind
            failure = FailureEnvelope.for_class(kind, step.error.message or f"simulated {kind}", provider_code=kind)
        if failure is not None:
            sink.run_failed(failure)
        else:
            sink.run_completed(stop_reason="end_turn")
        # A simulation plays the model it was asked for: that is the model it confirms.
        return ProviderOutcome.from_sink(sink, failure, session_id, changed, request.model or DEFAULT_MODEL)


def _wait(delay_ms: int, request: ProviderRequest) -> bool:
    """Sleep the step's delay; True when a steer came first (asked every 50 ms)."""
    end = time.monotonic() + delay_ms / 1000
    while (left := end - time.monotonic()) > 0:
        if request.steer_waiting is not None and request.steer_waiting():
            return True
        time.sleep(min(left, 0.05))
    return False


def _exists(write: SimulatedWrite, request: ProviderRequest) -> bool:
    """The file is there already (an edit, not a new file); False where its repo is unknown (refused below)."""
    try:
        return (request.repo_root(write.repo) / write.path).is_file()
    except (KeyError, OSError, ValueError):
        return False


def _apply_write(write: SimulatedWrite, request: ProviderRequest) -> tuple[str | None, str]:
    """Write (or append) the file; return (repo name or None for cwd, path relative to that root)."""
    name = write.repo if write.repo is not None else request.default_repo
    try:
        root = request.repo_root(write.repo).resolve()
    except KeyError:
        known = ", ".join(request.repos) or "none"
        raise WriteRefused(f"write to {write.path!r}: unknown repo {write.repo!r} (known: {known})") from None
    target = (root / write.path).resolve()
    if target == root or not target.is_relative_to(root):
        raise WriteRefused(f"write to {write.path!r} refused: outside {name or 'the working directory'} ({root})")
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("a" if write.append else "w", encoding="utf-8") as fh:
        fh.write(write.text)
    return name, target.relative_to(root).as_posix()



def _steer(control: SimulatedControl, request: ProviderRequest, sink: EventSink) -> None:
    """What `awp agent-control` does inside a real session, from the session's own environment."""
    env = request.env
    try:
        if control.progress:
            record_progress(env, control.progress)
        iteration = int(env.get(ENV_ITERATION, "0") or 0)
        make_request(env, control.action, control.reason,
                     token="forged-" + "x" * 24 if control.forge == "token" else None,
                     iteration=iteration + 1 if control.forge == "iteration" else None,
                     prompt_id="99" if control.forge == "prompt" else None)
        sink.message(f"agent-control {control.action}" + (f": {control.reason}" if control.reason else ""))
    except ControlError as err:
        sink.message(f"agent-control refused: {err}")
