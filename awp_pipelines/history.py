"""Attempt history read back from Dagster's event log: the stored facts budgets are counted from."""

from __future__ import annotations

from dagster import AssetKey, DagsterInstance

ATTEMPT_STARTED = "attempt_started"
# Enough for any AgentRun's budget; older records are not needed to count one AgentRun's attempts.
_WINDOW = 1000


def count_started_attempts(instance: DagsterInstance, key: AssetKey, agent_run: str) -> int:
    records = instance.fetch_observations(key, limit=_WINDOW).records
    count = 0
    for record in records:
        observation = record.asset_observation
        if observation is None:
            continue
        meta = observation.metadata
        started = plain_value(meta.get("awp/event")) == ATTEMPT_STARTED
        if started and plain_value(meta.get("awp/agent_run")) == agent_run:
            count += 1
    return count


def plain_value(value: object) -> str | None:
    """A stored metadata entry as its plain Python value."""
    return getattr(value, "value", value) if value is not None else None  # type: ignore[return-value]


def attempt_outcome(instance: DagsterInstance, run_id: str) -> dict[str, object] | None:
    """The metadata of the run's last Attempt record (a materialization, or an observation when it failed)."""
    from dagster import DagsterEventType

    events = instance.all_logs(run_id, of_type={DagsterEventType.ASSET_MATERIALIZATION,
                                                DagsterEventType.ASSET_OBSERVATION})
    for entry in reversed(events):
        dagster_event = entry.dagster_event
        if dagster_event is None:
            continue
        data = dagster_event.event_specific_data
        payload = getattr(data, "materialization", None) or getattr(data, "asset_observation", None)
        if payload is None:
            continue
        meta = {key: plain_value(value) for key, value in payload.metadata.items()}
        if meta.get("awp/result"):
            return meta
    return None


def agent_run_records(instance: DagsterInstance, key: AssetKey, agent_run: str) -> list[dict[str, object]]:
    """Every finished Attempt of one AgentRun, oldest first: materializations (the contract was checked)
    and observations (the Attempt failed before that), read from the event log."""
    found: dict[str, dict[str, object]] = {}
    for fetch in (instance.fetch_materializations, instance.fetch_observations):
        for record in fetch(key, limit=_WINDOW).records:
            event = record.asset_materialization or record.asset_observation
            if event is None:
                continue
            meta = event.metadata
            if plain_value(meta.get("awp/agent_run")) != agent_run or "awp/record" not in meta:
                continue
            data = plain_value(meta["awp/record"])
            if isinstance(data, dict):
                found[str(data["identity"]["attempt_id"])] = data  # type: ignore[index]
    return sorted(found.values(), key=lambda r: r["identity"]["number"])  # type: ignore[index]
