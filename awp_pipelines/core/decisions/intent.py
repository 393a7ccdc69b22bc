"""What a prompt asks for, as a fingerprint: part of its AgentRun's identity. Pure: no Dagster.

The domain keeps a retry or fallback in the same AgentRun only where intent is unchanged. Each Attempt's start
marker stores the fingerprint of its prompt's effective definition; when the prompt's definition changes while
its AgentRun is unfinished, the next Attempt starts a new AgentRun (budgets restart) and the old one ends
`cancelled (superseded)`. The fingerprint is four short digests, one per part, so a resume can say which
part changed: the body, the contract (`verify:`, the commit message), the targets (provider, model, effort,
accounts, fallback, repos) and the provider settings (every other execution key, the simulated script
included), each as the prompt's front matter and the packet manifest's defaults give them. Cosmetic keys
(name, phase, template, inert keys) and policy (recovery, budget, depends_on) are not intent.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from awp_pipelines.core.decisions.agent_run import AgentRunStatus
from awp_pipelines.core.packet.model.execution import ExecutionSettings
from awp_pipelines.core.packet.packet import Packet, Prompt

PARTS = ("body", "contract", "targets", "settings")
_CONTRACT = {"verify", "commit"}
_TARGETS = {"provider", "model", "reasoning_effort", "accounts", "fallback", "targets", "agent"}
_NOT_INTENT = {"id", "name", "phase", "template", "depends_on", "recovery", "budget", "references",
               "required_reading", "context_files"}


def intent_of(packet: Packet, prompt: Prompt) -> str:
    """The prompt's fingerprint as stored: `body:1a2b3c4d contract:… targets:… settings:…`."""
    front = prompt.front.model_dump(mode="json", exclude_none=True)
    defaults = packet.manifest.model_dump(mode="json", exclude_none=True, include=set(ExecutionSettings.model_fields))
    parts: dict[str, Any] = {
        "body": prompt.body.strip(),
        "contract": _pick(front, _CONTRACT),
        "targets": [_pick(front, _TARGETS), _pick(defaults, _TARGETS)],
        "settings": [_rest(front), _rest(defaults)],
    }
    return " ".join(f"{name}:{_digest(parts[name])}" for name in PARTS)


def changed_parts(stored: str, now: str) -> list[str]:
    """The parts whose digests differ (a part missing from `stored` counts as changed)."""
    old, new = _split(stored), _split(now)
    return [name for name in PARTS if old.get(name) != new.get(name)]


def _split(text: str) -> dict[str, str]:
    return dict(item.partition(":")[::2] for item in text.split())


def _pick(data: Mapping[str, Any], keys: set[str]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k in keys}


def _rest(data: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k not in _CONTRACT | _TARGETS | _NOT_INTENT}


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:8]


def superseded_status(through: int, stored: str, now: str) -> AgentRunStatus:
    """The earlier AgentRun (Attempts up to `through`, started under `stored`) that the definition `now` ended."""
    parts = ", ".join(changed_parts(stored, now)) or "definition"
    return AgentRunStatus("cancelled", f"superseded: the prompt's {parts} changed after attempt {through}; a new "
                          f"AgentRun starts at attempt {through + 1} with its own budget", "cancellation")


def change_line(prompt: str, stored: str, now: str, done: bool) -> str | None:
    """What a resume says before it starts about a prompt whose definition changed since its last Attempt."""
    parts = changed_parts(stored, now)
    if not parts:
        return None
    what = ("it stays completed in this packet run (a new packet run runs the new definition)" if done else
            "a new AgentRun starts for it; the old one ends cancelled (superseded)")
    return f"prompt {prompt} changed since its last Attempt ({', '.join(parts)}): {what}"
