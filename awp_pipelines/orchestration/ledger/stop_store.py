"""The user's stops of packet runs (stops.py), kept in the instance's key-value table like the accounts'
cooldowns: every process on the instance (daemon, webserver's runs, `awp run`) sees the same ones."""

from __future__ import annotations

import time
from collections.abc import Collection

from dagster import DagsterInstance

from awp_pipelines.core.decisions.stops import StopMarker, StopState
from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.dagster_compat.kvs import kv_get, kv_set


class StopStore:
    def __init__(self, instance: DagsterInstance) -> None:
        self._instance = instance

    def state(self, packet_run: str) -> StopState:
        key = tags.STOP_KEY + packet_run
        return StopState.parse(kv_get(self._instance, {key}).get(key))

    def states(self, packet_runs: Collection[str]) -> dict[str, StopState]:
        """Each packet run's state, in one read (a tick keeps every packet run still stopped in view)."""
        stored = kv_get(self._instance, {tags.STOP_KEY + p for p in packet_runs}) if packet_runs else {}
        return {p: StopState.parse(stored.get(tags.STOP_KEY + p)) for p in packet_runs}

    def marker(self, packet_run: str) -> StopMarker | None:
        return self.state(packet_run).marker

    def stop(self, packet_run: str, marker: StopMarker) -> StopState:
        """Store the stop (unless a resume came after it); returns what stands now."""
        old = self.state(packet_run)
        new = old.stop(marker)
        if new != old:
            self._write(packet_run, new)
        return new

    def resume(self, packet_run: str, at: float | None = None) -> StopMarker | None:
        """Lift the stop: the user launched the packet run again. Returns the stop it lifted, if any."""
        old = self.state(packet_run)
        self._write(packet_run, old.resume(time.time() if at is None else at))
        return old.marker

    def _write(self, packet_run: str, state: StopState) -> None:
        kv_set(self._instance, {tags.STOP_KEY + packet_run: state.dump()})
