"""The console of a run launched with no logger in its run config, at the level a terminal wants.

"Materialize all" in the UI and a sensor's run request name no logger in their run config, and then Dagster logs to
the console through its default system logger at DEBUG (or the instance's `python_logs.python_log_level`, which
would also drop a run's INFO lines from its event log): a job's own `loggers`, and the code location's, are used only
when the run config names them. `default_console_at(level)` sets the default console logger's level in this process
(a run worker, or a step's process, loads the code location before it builds its log manager), and prints an error
on one line: its exception's line, not the stack trace Dagster prints under every failed step, the expected repair
of the demo's included (upstream.md §4). The run's event log gets every event, line and trace as before (its handler
is not the console).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from dagster import InitLoggerContext, LoggerDefinition, colored_console_logger

_PATCHED = "_awp_console_level"
_TRACE = "\nStack Trace:"


def default_console_at(level: str) -> None:
    """Idempotent: the default console of every run this process executes logs `level` and above. Patches a private
    module's attribute (imported here, not when AWP loads: a rename upstream fails this call, and its canary)."""
    from dagster._core.execution import context_creation_job

    current: Callable[..., Sequence[tuple[Any, Mapping[str, Any]]]] = context_creation_job.default_system_loggers
    original = getattr(current, _PATCHED, None) or current

    def at_level(instance: Any) -> Sequence[tuple[Any, Mapping[str, Any]]]:
        return [(ONE_LINE_CONSOLE if logger_def is colored_console_logger else logger_def,
                 {**config, "log_level": level}) for logger_def, config in original(instance)]

    setattr(at_level, _PATCHED, original)
    context_creation_job.default_system_loggers = at_level


def one_line(message: str) -> str:
    """A failure's console message without its stack trace: `… failed. — Failure: repair next: …`."""
    head, _, _ = message.partition(_TRACE)
    return " — ".join(part.strip() for part in head.split("\n\n") if part.strip()) + \
        " (its stack trace: the run's page)"


class _OneLineErrors(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str) and _TRACE in record.msg:
            record.msg = one_line(record.msg)
        return True


def _one_line_console(init_context: InitLoggerContext) -> logging.Logger:
    logger = colored_console_logger.logger_fn(init_context)
    for handler in logger.handlers:
        handler.addFilter(_OneLineErrors())
    return logger


ONE_LINE_CONSOLE = LoggerDefinition(_one_line_console, config_schema=colored_console_logger.config_schema,
                                    description="Dagster's colored console, a failure on one line.")
