"""A stop the user asks for, as one Attempt's compute sees it: who handles the signal while it runs, whether
a stopped packet run may start it, and the stop its end stores for the packet run."""

from __future__ import annotations

import time
from contextlib import AbstractContextManager, nullcontext

from dagster import Failure

from awp_pipelines.core.decisions.stops import StopMarker
from awp_pipelines.core.engine import interrupts
from awp_pipelines.core.engine.attempt_record import AttemptRecord
from awp_pipelines.dagster_compat.tags import SENSOR_NAME_TAG
from awp_pipelines.orchestration.compute.step import Step


def signal_stop() -> AbstractContextManager[object]:
    """Under `awp run`, its Stop (interrupts.py) takes SIGINT and SIGTERM for the whole compute, in place of
    Dagster's handler, which raises them anywhere in it (mid-commit, mid-record): the Attempt then ends in
    order, `interrupted`, and its record is stored. Under a run worker there is none: Dagster's interrupt
    (a termination from the UI) cancels the Attempt (`cancel_on`)."""
    stop = interrupts.current()
    return stop.handling() if stop is not None else nullcontext()


def honour_stop(step: Step, packet_run: str, marker: StopMarker | None) -> None:
    """A packet run the user stopped (`marker`, read with the history under the lease): the sensor's launch
    (requested before the stop) starts no Attempt; a launch by hand carrying the packet run (the UI,
    `awp run --packet-run`) resumes it."""
    if marker is None:
        return
    if SENSOR_NAME_TAG in step.run.tags:
        raise Failure(description=f"packet run {packet_run} was {marker.line()}: no Attempt starts until the "
                      "user resumes it (`awp resume`, `awp run --packet-run`, or a launch from the UI)",
                      allow_retries=False)
    step.ledger.resume(packet_run, time.time())
    step.log.info(f"packet run {packet_run} resumed (it was {marker.line()})")


def store_stop(step: Step, packet_run: str, record: AttemptRecord, stopped: StopMarker | None) -> StopMarker | None:
    """An Attempt the user stopped (terminated from the UI; a signal to `awp run`) stops its packet run, stored
    before its run ends: a sensor tick that sees the run ended already sees the stop. Returns the stop that
    stands after it: `stopped` (the one read with the history, for the compute's duration) unless it stored one."""
    failure = record.failure or record.provider_failure
    stop = interrupts.current()
    what = f"run {step.run_id[:8]} was stopped during Attempt {record.identity.attempt_id}"
    if failure is not None and failure.failure_class == "user_cancelled":
        return step.ledger.stop(packet_run, StopMarker(time.time(), "ui_cancel", what)).marker
    if stop is not None and stop.signum is not None:
        return step.ledger.stop(packet_run, StopMarker.from_signal(stop.signum, time.time(), what)).marker
    return stopped
