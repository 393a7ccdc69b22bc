"""Any executable as an agent: the prompt on stdin, the workspace as cwd, plain text out.

Each stdout line becomes a streamed message fragment; the exit code is all the verdict there is (0 is
ok), with stderr's tail classified for a failure. The same deadlines and process-group kill apply.

Agent control: the executable gets the control channel in its environment and an `awp` first on its PATH
(environment.agent_env), so it can run `awp agent-control repeat|finish|…` itself.
"""

from __future__ import annotations

import shlex
from typing import Any, ClassVar

from awp_pipelines.core.providers.base import ProviderRequest
from awp_pipelines.core.providers.cli import CliAdapter, StreamParser
from awp_pipelines.core.providers.process import ProcessResult
from awp_pipelines.core.records.failures import FailureEnvelope


class PlainTextParser(StreamParser):
    def feed(self, line: str) -> object:
        self.sink.delta(line + "\n")
        return None

    def handle(self, event: dict[str, Any]) -> object:  # pragma: no cover - plain text has no events
        return None

    def finish(self, result: ProcessResult) -> FailureEnvelope | None:
        self.completed = result.exit_code == 0
        return super().finish(result)


class CommandAdapter(CliAdapter):
    kind: ClassVar[str] = "command"
    default_command: ClassVar[str] = ""
    parser_class = PlainTextParser

    def argv(self, request: ProviderRequest, resume: bool = False) -> list[str]:
        if not self.command:
            raise ValueError(f"provider {self.name}: a command provider needs `command`")
        return shlex.split(self.command)

    def stdin_text(self, request: ProviderRequest) -> str | None:
        return request.prompt_text
