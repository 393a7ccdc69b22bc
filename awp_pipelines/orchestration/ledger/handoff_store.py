"""Where a packet run's hand-off results are kept: `awp/handoff/<packet>/<packet run>` in the instance's key-value
store, one JSON list (a result per repo), so `awp status` shows the pull request's URL from any host; and the
URL as a tag of the packet run's first run, where the Dagster UI's run page and Runs list show it."""

from __future__ import annotations

import json
from collections.abc import Sequence

from dagster import DagsterInstance, RunsFilter

from awp_pipelines.core.packet.packet import Packet
from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.core.records.handoff_record import HandoffResult
from awp_pipelines.dagster_compat.kvs import kv_get, kv_set


def has_handoff(packet: Packet) -> bool:
    """Whether a repo of the packet hands its work off: only then is anything read or written here."""
    return any(repo.handoff is not None for repo in packet.repos.values())


def _key(packet: str, packet_run: str) -> str:
    return f"{tags.HANDOFF_KEY}{packet}/{packet_run}"


def handoff_of(instance: DagsterInstance, packet: str, packet_run: str) -> list[HandoffResult]:
    """The packet run's last hand-off, one result per repo; empty when none was tried."""
    key = _key(packet, packet_run)
    raw = kv_get(instance, {key}).get(key)
    return [HandoffResult.model_validate(r) for r in json.loads(raw)] if raw else []


def keep_handoff(instance: DagsterInstance, packet: str, packet_run: str, results: Sequence[HandoffResult]) -> None:
    kv_set(instance, {_key(packet, packet_run): json.dumps([r.model_dump() for r in results])})


def pull_request_urls(results: Sequence[HandoffResult]) -> str:
    """The `awp/pull_request` tag's value: the URLs of the hand-offs that have one, space-separated."""
    return " ".join(r.url for r in results if r.ok and r.url)


def tag_root_run(instance: DagsterInstance, packet_run: str, results: Sequence[HandoffResult]) -> None:
    """`awp/pull_request` on the packet run's first run: its URLs, one tag on one run (every run's tags cost the
    Runs list a line each)."""
    urls = pull_request_urls(results)
    first = instance.get_run_records(RunsFilter(tags={tags.PACKET_RUN: packet_run}), limit=1, ascending=True)
    if urls and first:
        instance.add_run_tags(first[0].dagster_run.run_id, {tags.PULL_REQUEST: urls})
