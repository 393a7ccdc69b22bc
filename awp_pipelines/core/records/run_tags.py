"""Every key under `awp/`, spelled here and nowhere else: run tags, Attempt metadata keys, stored values.

Run tags are the short, filterable provenance of the Attempt a run executes; never a secret. Metadata keys
name the fields of an Attempt's materialization or observation (`orchestration/metadata.py` builds the values,
`orchestration/history.py` reads them back); where a tag and a metadata field say the same thing they share one
key. This module is the home rather than `orchestration/metadata.py` because the pure core reads tags too and
must not import Dagster. A test (tests/test_vocabulary.py) fails when another module spells an `awp/` key.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Literal, get_args

from awp_pipelines.core.records.redact import redact

PREFIX = "awp/"
PACKET = f"{PREFIX}packet"
PACKET_RUN = f"{PREFIX}packet_run"
PROMPT = f"{PREFIX}prompt"
AGENT_RUN = f"{PREFIX}agent_run"
ATTEMPT = f"{PREFIX}attempt"
MODE = f"{PREFIX}mode"
PROVIDER = f"{PREFIX}provider"
ACCOUNT = f"{PREFIX}account"
MODEL = f"{PREFIX}model"
EFFORT = f"{PREFIX}effort"
REASON = f"{PREFIX}reason"
PARENT_RUN = f"{PREFIX}parent_run"
NOTE = f"{PREFIX}note"  # a person's note for a repair by hand: short and redacted, added to the repair prompt
COMMIT = f"{PREFIX}commit"  # + .<repo> (or .<prompt>.<repo> in a run of several prompts) = the full sha
PROMPTS = f"{PREFIX}prompts"  # a run of several prompts lists them; their Attempts are in its events
RUNNER = f"{PREFIX}runner"  # the `awp run` process driving the run: host:pid:process start time
IGNORE_DEPS = f"{PREFIX}ignore_deps"  # "true": the user ran prompts whose upstream is not completed (--ignore-deps)
# The run tags of an Attempt's run: what a user filters the Runs page on. Its agent run, reason, effort and
# parent run are Attempt metadata (the parent is also Dagster's own tag, dagster_compat/tags.py), not tags.
RUN_TAGS = (PACKET, PACKET_RUN, PROMPT, ATTEMPT, MODE, PROVIDER, ACCOUNT, MODEL)

# Attempt metadata (materialization / observation) beyond the keys above, which it shares with the tags.
RESULT = f"{PREFIX}result"
PAGE = f"{PREFIX}page"  # the Attempt's page (`awp serve`): the first metadata entry
TARGET = f"{PREFIX}target"  # provider/account/model in one value
RECORD = f"{PREFIX}record"  # the whole AttemptRecord as JSON: what history reads back
EVENT = f"{PREFIX}event"  # a marker's kind: `attempt_started`
ATTEMPT_NUMBER = f"{PREFIX}attempt_number"
INTENT = f"{PREFIX}intent"  # on a start marker: the fingerprint of the prompt's definition (intent.py)
FAILURE_CLASS = f"{PREFIX}failure_class"
FAILURE = f"{PREFIX}failure"
UNMET = f"{PREFIX}unmet"
DURATION_S = f"{PREFIX}duration_s"
TOKENS_IN = f"{PREFIX}tokens_in"
TOKENS_OUT = f"{PREFIX}tokens_out"
TOKENS_CACHED = f"{PREFIX}tokens_cached"
TOKENS_REASONING = f"{PREFIX}tokens_reasoning"
COST_SOURCE = f"{PREFIX}cost_source"
COST_USD = f"{PREFIX}cost_usd"
ATTEMPTS = f"{PREFIX}attempts"
VERIFIER = f"{PREFIX}verifier"
COMMITS = f"{PREFIX}commits"
TRANSCRIPT = f"{PREFIX}transcript"
SESSION_ID = f"{PREFIX}session_id"
EVENTS = f"{PREFIX}events"
PACKET_RUN_SPEND = f"{PREFIX}packet_run_spend"
LIFECYCLE = f"{PREFIX}lifecycle"
CONTROL = f"{PREFIX}control"
ISOLATION = f"{PREFIX}isolation"  # the sandbox the agent ran in, one line (isolation/record.py)
AGENT_RUN_STATE = f"{PREFIX}agent_run_state"  # the AgentRun's state once this Attempt ended (agent_run.py)
AGENT_RUN_CAUSE = f"{PREFIX}agent_run_cause"  # its cause category (attempt_lifecycle.Cause), when one applies
PACKET_RUN_STATE = f"{PREFIX}packet_run_state"  # the packet run's state, a tag on its root run (UI)
# Asset definitions: the prompt's agent role (an asset tag) and its file (asset metadata).
ROLE = f"{PREFIX}role"
PROMPT_FILE = f"{PREFIX}prompt_file"
# Keys of the instance's key-value store: + <account>.
COOLDOWN_KEY = f"{PREFIX}cooldown/"
USAGE_KEY = f"{PREFIX}usage/"
STOP_KEY = f"{PREFIX}stop/"  # + <packet run>: the user's stop of it (stops.py)
SETTLED_KEY = f"{PREFIX}settled/"  # + <packet run>: its run count when a newer packet run settled it (settling.py)
BRANCH_PREFIX = PREFIX  # a packet run's branch on a remote repo: <prefix><packet>/<packet run> (remote.py)
CLAIM_KEY = f"{PREFIX}claim/"  # + Attempt id: the one process that starts it (orchestration/claims.py)
HEARTBEAT_KEY = f"{PREFIX}heartbeat/"  # + <run id>/<step key>: a compute's liveness (heartbeat.py)

# The one definition of the modes. A mode other than `run` starts a new Attempt of an AgentRun that has one
# already: these are also the decision function's actions that launch (`policy.Action`).
Relaunch = Literal["retry", "resume", "fallback", "repair", "iterate"]
Mode = Literal["run", Relaunch]
MODES: tuple[Mode, ...] = get_args(Mode)
_MAX_VALUE = 120
_UNSAFE = re.compile(r"[\r\n\t]")


def short(value: str) -> str:
    """Tag values stay one short line, secret patterns redacted (a reason may quote a provider's message);
    long reasons live in metadata."""
    text = _UNSAFE.sub(" ", redact(value)).strip()
    return text if len(text) <= _MAX_VALUE else text[: _MAX_VALUE - 1] + "…"


def tag_values(raw: Mapping[str, str | None]) -> dict[str, str]:
    """Tags as written: empty values left out, each one `short` (one line, redacted)."""
    return {k: short(v) for k, v in raw.items() if v}


def agent_run_id(packet_run: str, prompt_id: str) -> str:
    """The logical assignment (packet run × prompt); every Attempt of it shares this id."""
    return f"{packet_run}.{prompt_id}"


def attempt_id(agent_run: str, number: int) -> str:
    return f"{agent_run}.a{number}"
