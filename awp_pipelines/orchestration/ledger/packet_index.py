"""Which packet runs a packet has: `awp/packet_runs/<packet>/<packet run>` in the instance's key-value store, the
time a run last joined it as its value. Runs carry only their packet-run tag (the Runs list shows every tag on
a line of its own, so a packet tag would cost every row a line): a reader of a packet's runs lists its packet
runs here (one prefix read on the key's index), then their runs by the packet-run tag (the tag index).

A packet run is noted wherever a run joins one: `awp run` and `awp repair` before they launch, and a run's
first compute (compute/launch_choice.py) or the recovery sensor (asset_job_runs.py) when they tag it. A read
never writes."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from dagster import AssetKey, DagsterInstance, DagsterRun, RunsFilter

from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.dagster_compat.kvs import kv_prefixed, kv_set
from awp_pipelines.orchestration.ledger.history import PacketRunHistory

if TYPE_CHECKING:
    from awp_pipelines.orchestration.ledger.ledger import Ledger


def _prefix(packet: str) -> str:
    return f"{tags.PACKET_RUNS_KEY}{packet}/"


def note_packet_run(instance: DagsterInstance, packet: str, packet_run: str, at_ms: int | None = None) -> None:
    at = int(time.time() * 1000) if at_ms is None else at_ms
    kv_set(instance, {_prefix(packet) + packet_run: str(at)})


def packet_runs_of(instance: DagsterInstance, packet: str) -> list[str]:
    """The packet's packet runs, the one a run joined last first."""
    noted = kv_prefixed(instance, _prefix(packet))
    by_time = sorted(noted.items(), key=lambda item: int(item[1]) if item[1].isdigit() else 0, reverse=True)
    return [key.removeprefix(_prefix(packet)) for key, _ in by_time]


def packet_runs_filter(instance: DagsterInstance, packet: str,
                       statuses: Sequence[object] | None = None) -> RunsFilter | None:
    """The filter of the packet's runs (of `statuses`), by their packet-run tag; None when it has none."""
    packet_runs = packet_runs_of(instance, packet)
    if not packet_runs:
        return None
    return RunsFilter(tags={tags.PACKET_RUN: packet_runs}, statuses=list(statuses or []))  # type: ignore[arg-type]


def runs_of_packet(instance: DagsterInstance, packet: str, statuses: Sequence[object] | None = None,
                   limit: int | None = None) -> list[DagsterRun]:
    """The packet's runs (of `statuses`), newest first."""
    of_packet = packet_runs_filter(instance, packet, statuses)
    if of_packet is None:
        return []
    # Once each: a run whose tag row was stored twice (seen on dagster 1.12's SQLite) came back twice.
    return list({run.run_id: run for run in instance.get_runs(of_packet, limit=limit)}.values())


_RECENT = 200  # packet runs of the packet looked through for the prompt's latest one


def latest_history(ledger: Ledger, packet: str, keys: Mapping[AssetKey, str],
                   prompt: str) -> PacketRunHistory | None:
    """`Ledger.latest_history`, for both ledgers: the packet's packet runs newest first (the index), each read
    until one holds an Attempt record of the prompt."""
    for packet_run in ledger.packet_runs(packet)[:_RECENT]:
        history = ledger.history(packet_run, keys)
        if prompt in history.agent_runs and history.agent_runs[prompt].records:
            return history
    return None
