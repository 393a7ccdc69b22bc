"""`cli_confirmation`: did the provider run the model it was asked for? Pure: no Dagster, no clock.

Prompt Runner's local deterministic classes: `cli_confirmation_missing` (the provider named no model) and
`cli_confirmation_mismatch` (it named another). `off` checks nothing, `warn` records an error event and
goes on, `require` fails the Attempt; the record keeps the reported model whatever the setting.
"""

from __future__ import annotations

import re

from awp_pipelines.core.providers.base import ProviderOutcome
from awp_pipelines.core.records.events import EventSink
from awp_pipelines.core.records.failures import FailureEnvelope


def _name(model: str) -> str:
    """The model's own name: without a routing prefix (`opencode/…`, `openrouter/…`), lower case."""
    return model.strip().lower().rsplit("/", 1)[-1].removesuffix(":free")


def model_confirms(asked: str, reported: str) -> bool:
    """The reported model is the one asked for: the same name, a dated or versioned form of it
    (`claude-haiku-4-5` → `claude-haiku-4-5-20251001`, not `gpt-5` → `gpt-5-mini`), or the CLI's model for
    an alias without digits (`haiku` → `claude-haiku-4-5`)."""
    want, got = _name(asked), _name(reported)
    if not want:
        return False
    if re.fullmatch(re.escape(want) + r"(-\d[\d.-]*|-latest)?", got):
        return True
    return not any(c.isdigit() for c in want) and want in got.split("-")


def confirmation_failure(asked: str | None, reported: str | None) -> FailureEnvelope | None:
    """The failure when the provider's report does not confirm `asked` (None: confirmed, or nothing asked)."""
    if not asked:
        return None
    if not reported:
        return FailureEnvelope.for_class("cli_confirmation_missing",
                                         f"the provider did not report which model it ran (asked for {asked})")
    if model_confirms(asked, reported):
        return None
    return FailureEnvelope.for_class("cli_confirmation_mismatch",
                                     f"the provider ran model {reported}, not the {asked} it was asked for")


def confirm(outcome: ProviderOutcome, mode: str | None, asked: str | None, sink: EventSink) -> ProviderOutcome:
    """The outcome under `cli_confirmation`: a `require` that is not met fails it (an earlier provider failure
    stands: it says more); a `warn` only records the finding."""
    if mode not in ("warn", "require"):
        return outcome
    failure = confirmation_failure(asked, outcome.reported_model)
    if failure is None:
        return outcome
    if mode == "warn" or outcome.failure is not None:
        sink.error(failure.message, source="cli_confirmation", failure_class=failure.failure_class)
        return outcome
    sink.run_failed(failure)
    return outcome.model_copy(update={"ok": False, "failure": failure})
