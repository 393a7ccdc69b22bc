"""Dagster feature request: a step that ends with `dagster.Failure` (an intentional, described failure) still
shows a Python stack trace in the run's log, so an expected outcome reads as a crash.

Runs on bare Dagster (no AWP): `python tools/upstream/failure_keeps_stack_trace.py`. Exit 0 and "REPRODUCED"
when the STEP_FAILURE event of a step that raised `Failure(description=..., metadata=...)` carries a non-empty
stack (the UI prints it under "Stack Trace:" in the run's event log, `LogsRowStructuredContent.tsx`
FailureContent: shown whenever `error.stack` is non-empty); exit 1 otherwise.

Why: `execute_plan.dagster_event_sequence_for_step` catches `Failure` (its "case (2)": "user code fails
successfully") and builds the event with `step_failure_event_from_exc_info(step_context, sys.exc_info(), ...)`,
so the traceback of the raise is serialized like any exception's. The description and metadata are already in
`user_failure_data` (label "intentional-failure").

Proposed: let a `Failure` end the step without its traceback (say `Failure(..., include_traceback=False)`, or
leave the stack out for `user_failure_data`), or have the UI fold the stack of an intentional failure behind
"View full message".
"""

from __future__ import annotations

import sys
import tempfile

from dagster import AssetKey, DagsterEventType, DagsterInstance, Failure, asset, materialize


@asset
def expected_outcome() -> None:
    raise Failure(description="the agent's answer missed one verifier item; a repair follows",
                  metadata={"unmet": "CHANGELOG.md contains '## Unreleased'"}, allow_retries=False)


def main() -> int:
    import dagster

    with tempfile.TemporaryDirectory() as home, DagsterInstance.local_temp(home) as instance:  # SQLite
        result = materialize([expected_outcome], instance=instance, raise_on_error=False)
        failures = [e.dagster_event for e in instance.all_logs(result.run_id, of_type=DagsterEventType.STEP_FAILURE)
                    if e.dagster_event is not None]
    data = failures[0].step_failure_data if failures else None
    print(f"dagster {dagster.__version__}: one asset ({AssetKey('expected_outcome').to_user_string()}) whose step "
          f"raises Failure(description, metadata)")
    if data is None:
        print("no STEP_FAILURE event: nothing to say")
        return 1
    user = data.user_failure_data
    stack = data.error.stack if data.error else []
    label, description = (user.label, user.description) if user else (None, None)
    print(f"user_failure_data: label={label!r} description={description!r}")
    print(f"error.stack: {len(stack)} frames, the last: {stack[-1].strip() if stack else None!r}")
    if user is not None and stack:
        print("REPRODUCED: the intentional Failure's event carries its traceback; the run's log prints it under "
              "'Stack Trace:' beside the description and metadata")
        return 0
    print("not reproduced: the Failure's event has no stack")
    return 1


if __name__ == "__main__":
    sys.exit(main())
