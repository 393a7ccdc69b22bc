"""One housekeeping loop per instance, not per packet: the code location's `awp_housekeeping` sensor.

What no packet owns is done here once a tick, one query per concern, whatever the number of packets:
- silent runs: the unfinished runs whose compute stopped beating (a Celery worker killed, a host lost) are
  failed and their slots freed, and the beats of ended runs dropped (`Ledger.reap`: every beat in one read,
  their runs in one more);
- ended runs' pool slots and queue rows: given back (`Ledger.free_ended_slots`: the holders in one read, their
  runs in one more), unless Dagster's run monitoring does it (`run_monitoring.free_slots_after_run_end_seconds` on an
  enabled run monitoring: the daemon that ticks this sensor runs it too).

The recovery sensor (sensors.py) then reads only what its packets need. `awp run`, which has no daemon,
does the same work for its packet before it starts (`Ledger.reap` of its packet).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dagster import (
    DagsterInstance,
    DefaultSensorStatus,
    SensorDefinition,
    SensorEvaluationContext,
    SkipReason,
    sensor,
)

from awp_pipelines.orchestration.ledger.factory import tick_ledger
from awp_pipelines.orchestration.ledger.instance import tick_instance
from awp_pipelines.orchestration.ledger.ledger import Ledger

HOUSEKEEPING_SENSOR = "awp_housekeeping"
# Every third wake-up of the daemon (sensors.py), not every one: a silent run is only failed once its beat is
# 30 s or more overdue (heartbeat.Beat.bound_s) and run monitoring frees ended runs' slots after 30 s, so 15 s
# more is within what the loop already waits, while each tick has a fixed cost in the daemon and the code
# server (a gRPC call, the tick's writes): 4 ticks a minute instead of 12 (bench/sensor_daemon_cpu.py).
INTERVAL_S = 15


@dataclass(frozen=True)
class Swept:
    failed: list[str] = field(default_factory=list)  # runs failed for a silent compute
    freed: list[str] = field(default_factory=list)  # ended runs whose slots and queue rows were given back

    def summary(self) -> str:
        return f"{len(self.failed)} silent run(s) failed, slots of {len(self.freed)} ended run(s) freed"


def run_monitoring_frees_slots(instance: DagsterInstance) -> bool:
    """Whether Dagster's run monitoring gives back the slots of ended runs on this instance (under the daemon)."""
    return bool(instance.run_monitoring_enabled
                and instance.run_monitoring_settings.get("free_slots_after_run_end_seconds"))


def sweep(ledger: Ledger, slots: bool = True) -> Swept:
    """One round of the instance's housekeeping; `slots=False` leaves the ended runs' slots to run monitoring."""
    failed = list(ledger.reap())
    return Swept(failed, ledger.free_ended_slots() if slots else [])


def housekeeping_sensor() -> SensorDefinition:
    @sensor(name=HOUSEKEEPING_SENSOR, minimum_interval_seconds=INTERVAL_S, default_status=DefaultSensorStatus.RUNNING,
            description="AWP's housekeeping for every packet of the instance: fails the runs whose compute stopped "
                        "beating (a dead worker or host) and frees their slots; frees the slots of ended runs "
                        "where run monitoring does not. Launches nothing.")
    def _housekeeping(context: SensorEvaluationContext) -> SkipReason:
        swept = sweep(tick_ledger(context), slots=not run_monitoring_frees_slots(tick_instance(context)))
        for run_id in swept.failed:
            context.log.warning(f"run {run_id[:8]} failed: its compute stopped beating")
        return SkipReason(swept.summary())

    return _housekeeping


# One object for every place that adds it (the code location, each PacketComponent): Dagster merges the same
# sensor object into one, where two equal ones would clash by name.
HOUSEKEEPING = housekeeping_sensor()
