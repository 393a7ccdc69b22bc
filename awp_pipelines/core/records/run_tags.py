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
PACKET_RUN = f"{PREFIX}packet_run"
ATTEMPT = f"{PREFIX}attempt"
MODE = f"{PREFIX}mode"  # Attempt metadata; as a tag, a person's ask for a repair by hand (`awp/mode=repair`)
PROVIDER = f"{PREFIX}provider"
ACCOUNT = f"{PREFIX}account"
MODEL = f"{PREFIX}model"
EFFORT = f"{PREFIX}effort"
REASON = f"{PREFIX}reason"
PARENT_RUN = f"{PREFIX}parent_run"
NOTE = f"{PREFIX}note"  # a person's note for a repair by hand: short and redacted, added to the repair prompt
COMMIT = f"{PREFIX}commit"  # Attempt metadata: the commits it made, <repo>@<sha>
PULL_REQUEST = f"{PREFIX}pull_request"  # on a packet run's first run: the pull request its hand-off opened or updated
IGNORE_DEPS = f"{PREFIX}ignore_deps"  # "true": the user ran prompts whose upstream is not completed (--ignore-deps)
# The run tags every run of a packet carries: what a user filters the Runs page on. Dagster's Runs list shows
# each tag outside `dagster/` on a line of its own in every row (1 tag: 8 rows at 1400x900, 2: 6, 3: 5), so
# an Attempt's identity, mode, target and commits are its metadata (the asset's events, the Attempt page), not
# tags; the parent run is Dagster's own tag (dagster_compat/tags.py), which the UI groups retries by. A launch
# that chose its account also carries it: the run queue runs one run per account (dagster.yaml). A packet's
# packet runs are listed in the instance's key-value store (PACKET_RUNS_KEY), not tagged on each run.
RUN_TAGS = (PACKET_RUN, ACCOUNT)

# Attempt metadata (materialization / observation) beyond the keys above, which it shares with the tags.
RESULT = f"{PREFIX}result"
PAGE = f"{PREFIX}page"  # the Attempt's page (`awp serve`): the first metadata entry
TARGET = f"{PREFIX}target"  # provider/account/model in one value
RECORD = f"{PREFIX}record"  # the whole AttemptRecord as JSON: what history reads back
EVENT = f"{PREFIX}event"  # a marker's kind: `attempt_started` (markers stored before `awp/started`)
STARTED = f"{PREFIX}started"  # a start marker's fields as one JSON entry (ledger/history.py)
ATTEMPT_NUMBER = f"{PREFIX}attempt_number"
INTENT = f"{PREFIX}intent"  # on a start marker: the fingerprint of the prompt's definition (intent.py)
FAILURE_CLASS = f"{PREFIX}failure_class"
FAILURE = f"{PREFIX}failure"
DURATION_S = f"{PREFIX}duration_s"
TOKENS_CACHED = f"{PREFIX}tokens_cached"
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
NEXT = f"{PREFIX}next"  # a failed Attempt's next step: "repair next — …, launched by …" (agent_run.py next_step)
AGENT_RUN_STATE = f"{PREFIX}agent_run_state"  # the AgentRun's state once this Attempt ended (agent_run.py)
AGENT_RUN_CAUSE = f"{PREFIX}agent_run_cause"  # its cause category (attempt_lifecycle.Cause), when one applies
# Asset definitions: the prompt's agent role (an asset tag) and its file (asset metadata).
ROLE = f"{PREFIX}role"
PROMPT_FILE = f"{PREFIX}prompt_file"
# Keys of the instance's key-value store: + <account>.
COOLDOWN_KEY = f"{PREFIX}cooldown/"
USAGE_KEY = f"{PREFIX}usage/"
STOP_KEY = f"{PREFIX}stop/"  # + <packet run>: the user's stop of it (stops.py)
PACKET_RUNS_KEY = f"{PREFIX}packet_runs/"  # + <packet>/<packet run>: the packet's packet runs (its index)
SETTLED_KEY = f"{PREFIX}settled/"  # + <packet run>: its run count when a newer packet run settled it (adoption.py)
BRANCH_PREFIX = PREFIX  # a packet run's branch on a remote repo: <prefix><packet>/<packet run> (remote.py)
CLAIM_KEY = f"{PREFIX}claim/"  # + Attempt id: the one process that starts it (`Ledger.claim_attempt`)
RUNNER_KEY = f"{PREFIX}runner/"  # + <run id>: the `awp run` process driving it, host:pid:start time (liveness.py)
HANDOFF_KEY = f"{PREFIX}handoff/"  # + <packet>/<packet run>: its hand-off's results, JSON (views/handoff.py)
HEARTBEAT_KEY = f"{PREFIX}heartbeat/"  # + <run id>/<step key>: a compute's liveness (liveness.py)

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


def agent_run_id(packet_run: str, prompt_id: str, generation: int = 1) -> str:
    """The logical assignment (packet run × prompt); every Attempt of it shares this id. A prompt whose
    definition changed while its AgentRun was unfinished starts a new AgentRun (core/decisions/intent.py): its
    `generation` (2, 3, …, counted from the stored history) gives it an id of its own, `<packet run>.<prompt>.r2`,
    so the superseded one and its successor differ everywhere (status, watch, blame, trailers, the page)."""
    return in_generation(f"{packet_run}.{prompt_id}", generation)


def in_generation(first: str, generation: int) -> str:
    """The id of AgentRun `generation` of a prompt whose first AgentRun is `first`."""
    return first if generation <= 1 else f"{first}.r{generation}"


def attempt_id(agent_run: str, number: int) -> str:
    return f"{agent_run}.a{number}"
