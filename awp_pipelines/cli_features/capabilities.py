"""`awp capabilities`: what this installation can do, as data a script checks instead of parsing `--help` (Prompt
Runner's `capabilities`: one name a line, or `--json` with a schema and the version).

Prompt Runner's own names are listed where AWP has the same behaviour; AWP's own names follow. Each is backed by what
it says: tests/cli_features/test_capabilities.py checks every name against the code that provides it.
"""

from __future__ import annotations

from awp_pipelines.core.packet.install import VERSION
from awp_pipelines.core.providers.registry import CLI_ADAPTERS

SCHEMA = "awp.capabilities/v1"

# Prompt Runner 0.12.1's capabilities that AWP has: name → what provides it.
PROMPT_RUNNER: dict[str, str] = {
    "cli.strict_options": "an unknown option is an error (click), never ignored",
    "selector.explicit_many": "`awp run PACKET 01 03` runs each prompt named",
    "selector.remaining": "`--remaining`: the prompts not completed in the newest packet run",
    "selector.lower_bound": "`--from ID`",
    "selector.upper_bound": "`--through ID`",
    "verifier.argv": "`commands` entries run as argv, never through a shell",
    "verifier.typed_faults": "verifier_fault and verifier_timeout, apart from a failed item",
    "events.append_only": "each Attempt's events are one JSONL file, appended to",
    "agent_control.linear": "agent_control over a linear packet: continue, repeat, finish, blocked",
}
# AWP's own.
AWP: dict[str, str] = {
    "orchestration.dagster": "each prompt an asset, each verifier item a blocking asset check",
    "recovery.sensor": "retries, fallbacks and repairs launched by the daemon's recovery sensor",
    "fallback.chains": "model aliases: ordered chains of (provider, account, model) targets",
    "isolation.sandbox": "the agent runs in bubblewrap with only its grants",
    "handoff.pull_request": "a packet run's work pushed and proposed as one pull request",
    **{f"provider.{kind}": f"the {kind} CLI as a provider kind" for kind in sorted(CLI_ADAPTERS) if kind != "command"},
}


def capabilities() -> list[str]:
    return [*PROMPT_RUNNER, *AWP]


def document() -> dict[str, object]:
    return {"schema": SCHEMA, "version": VERSION, "capabilities": capabilities()}
