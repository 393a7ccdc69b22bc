"""`commands`: run an executable (argv, never a shell) and tell a failure of the work from a check that
could not run.

exit 0 passes; other exits fail (repairable). A fault (`verifier_fault`) is an exit listed in
`fault_exit_codes`, a bare name missing from PATH, a missing absolute path, a missing cwd, outputs that
could not be moved aside, or a verifier's sandbox that cannot start here; `verifier_timeout` is the
deadline. A missing *relative* executable is an ordinary failure: it may be a file the prompt was meant to
create.

The command runs the agent's work, so it runs in the verifier's sandbox (isolation/verifier_sandbox.py)
unless the context says `none` (the agent itself ran unsandboxed). The program is found outside, on the
runner's PATH, and run inside by its absolute path.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from awp_pipelines.core.isolation.verifier_sandbox import VerifierPlaces, VerifierSandboxUnavailable, verifier_sandbox
from awp_pipelines.core.packet.model.contract import CommandCheck, command_text

from ..context import VerifyContext
from ..paths import locate_path
from ..process import Finished, run_bounded
from ..report import Fault, cap_lines
from . import regenerates
from .outcome import Outcome

MAX_DETAIL_LINES = 40
_INHERITED = ("PATH", "HOME", "LANG")


def commands(spec: CommandCheck, ctx: VerifyContext) -> Outcome:
    return _Run(spec, ctx).outcome()


def command_env(ctx: VerifyContext, extra: dict[str, str]) -> dict[str, str]:
    """A minimal environment: no credentials leak into a check from the runner's own environment."""
    env = {name: os.environ[name] for name in _INHERITED if name in os.environ}
    env.setdefault("PATH", os.defpath)
    return {**env, **ctx.env, **extra}


class _Run:
    """One command's resolution, execution and verdict; the fields fill the Outcome."""

    def __init__(self, spec: CommandCheck, ctx: VerifyContext) -> None:
        self.spec, self.ctx = spec, ctx
        self.repo = spec.repo or ctx.default_name()
        self.command = command_text(spec)
        self.cwd: Path | None = None
        self.program: str | None = None

    def outcome(self) -> Outcome:
        where = locate_path(self.spec.repo, self.spec.cwd, self.ctx, entry=f"cwd {self.spec.cwd}")
        if where.resolved is None:
            return self._result(False, [where.error or "cwd could not be resolved"])
        self.cwd = where.resolved
        if not self.cwd.is_dir():
            return self._result(False, [f"working directory does not exist: {self.cwd}"], "verifier_fault")
        env = command_env(self.ctx, self.spec.env)
        early = self._resolve_program(env)
        if early is not None:
            return early
        outputs = [locate_path(self.spec.repo, p, self.ctx, entry=f"regenerates {p}") for p in self.spec.regenerates]
        escaped = [o.error for o in outputs if o.resolved is None]
        if escaped:
            return self._result(False, [e or "" for e in escaped])
        try:
            root = self.ctx.roots()[self.repo].absolute()
            staged = regenerates.stage([o.resolved for o in outputs if o.resolved is not None], root)
        except regenerates.StagingError as exc:
            return self._result(False, [str(exc)], "verifier_fault")

        try:
            result = self._execute(env)
            if result.passed:
                result = self._check_outputs(result, staged)
        except BaseException:
            regenerates.restore(staged)
            raise
        if result.passed:
            regenerates.commit(staged)
        else:
            regenerates.restore(staged)
        return result

    def _resolve_program(self, env: dict[str, str]) -> Outcome | None:
        """Find the executable, or say why not (fault for infrastructure, failure for a prompt's output)."""
        exe = self.spec.exec
        assert self.cwd is not None
        if os.path.isabs(exe):
            if os.path.isfile(exe):
                self.program = exe
                return None
            return self._result(False, [f"executable not found: {exe}"], "verifier_fault")
        if self._relative_exec():
            root = self.ctx.roots()[self.repo].absolute()
            relative = os.path.relpath(os.path.normpath(self.cwd / exe), root)
            where = locate_path(self.spec.repo, relative, self.ctx, entry=f"exec {exe}")
            if where.resolved is None:
                return self._result(False, [where.error or ""])
            if not where.resolved.is_file():
                return self._result(False, [f"executable not found: {exe} (looked for {where.resolved})"])
            self.program = str(where.resolved)
            return None
        found = shutil.which(exe, path=env["PATH"])
        if found is None:
            return self._result(False, [f"executable not found on PATH: {exe}"], "verifier_fault")
        self.program = found
        return None

    def _execute(self, env: dict[str, str]) -> Outcome:
        assert self.program is not None and self.cwd is not None
        # A file the prompt wrote but left unrunnable is its failure; anything else cannot run here.
        fault: Fault | None = None if self._relative_exec() else "verifier_fault"
        if not os.access(self.program, os.X_OK):  # told here: inside, bwrap's own exit would hide it
            return self._result(False, [f"could not start {self.program}: Permission denied"], fault)
        try:
            done = self._run(env)
        except VerifierSandboxUnavailable as exc:
            return self._result(False, [str(exc)], "verifier_fault")
        except OSError as exc:
            return self._result(False, [f"could not start {self.program}: {exc.strerror or exc}"], fault)
        if done.timed_out:
            summary = f"verifier_timeout: killed after {self.spec.timeout_ms} ms"
            return self._unmet(done, summary, fault="verifier_timeout")
        code = done.exit_code
        if code in self.spec.fault_exit_codes:
            summary = f"verifier_fault: exit {code} is listed in fault_exit_codes"
            return self._unmet(done, summary, fault="verifier_fault")
        if code != 0:
            how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit {code}"
            return self._unmet(done, f"failed: {how}")
        problems = self._output_problems(done.output)
        if problems:
            return self._unmet(done, *problems)
        return self._result(True, ["exit 0"], exit_code=0)

    def _run(self, env: dict[str, str]) -> Finished:
        """The command in the verifier's sandbox, or beside the runner with `isolation: none`."""
        assert self.program is not None and self.cwd is not None
        argv = [self.program, *self.spec.args]
        if self.ctx.isolation == "none":
            return run_bounded(argv, self.cwd, env, self.spec.timeout_ms)
        places = VerifierPlaces(trees=tuple(self.ctx.repos.values()), packet_root=self.ctx.packet_root,
                                state=self.ctx.state)
        with verifier_sandbox(places, argv, self.cwd, {**self.ctx.env, **self.spec.env}, self.spec.network) as box:
            return run_bounded(box.argv, self.cwd, box.env, self.spec.timeout_ms)

    def _relative_exec(self) -> bool:
        return "/" in self.spec.exec and not os.path.isabs(self.spec.exec)

    def _output_problems(self, output: str) -> list[str]:
        problems = []
        if self.spec.stdout_contains is not None and self.spec.stdout_contains not in output:
            problems.append(f"output does not contain {self.spec.stdout_contains!r}")
        pattern = self.spec.stdout_matches
        if pattern is not None and not re.search(pattern, output, re.IGNORECASE):
            problems.append(f"output does not match /{pattern}/i")
        return problems

    def _check_outputs(self, result: Outcome, staged: list[regenerates.Staged]) -> Outcome:
        escaped = regenerates.escaped(staged)
        if escaped:
            listed = ", ".join(str(p) for p in escaped)
            return self._result(False, [f"regenerated output's folder was replaced by a link out of the repo: "
                                        f"{listed}; left as it is"], exit_code=result.exit_code)
        missing = regenerates.missing_outputs(staged)
        if not missing:
            return result
        listed = ", ".join(str(p) for p in missing)
        return self._result(False, [f"regenerated output missing or empty: {listed}"], exit_code=result.exit_code)

    def _unmet(self, done: Finished, *summary: str, fault: Fault | None = None) -> Outcome:
        lines = done.output.splitlines() or ["(no output)"]
        shown = cap_lines(lines, MAX_DETAIL_LINES - len(summary), keep="tail")
        return self._result(False, [*summary, *shown], fault, exit_code=done.exit_code)

    def _result(
        self, passed: bool, details: list[str], fault: Fault | None = None, *, exit_code: int | None = None
    ) -> Outcome:
        return Outcome(
            passed,
            details,
            repo=self.repo,
            resolved_path=self.program,
            fault=fault,
            command=self.command,
            cwd=str(self.cwd) if self.cwd is not None else None,
            exit_code=exit_code,
        )
