"""Dagster feature request: open-source Dagster never records that a planned asset failed to materialize, so the
asset's Events list (which draws a `FailedToMaterializeEvent` with a red "run_failed" icon) shows a failed
step as nothing at all, and whatever the step did log (an observation) with the same green icon as a success.

Runs on bare Dagster (no AWP): `python tools/upstream/failed_materialization_not_stored.py`. Exit 0 and
"REPRODUCED" when, after a run whose asset step raised `Failure`, the public
`DagsterInstance.fetch_failed_materializations` finds no record for the asset while the asset's observation
logged before the raise is stored; exit 1 otherwise.

Why: `DagsterEvent.build_asset_failed_to_materialize_event` (ASSET_FAILED_TO_MATERIALIZE, with
`AssetMaterializationFailure`: FAILED / FAILED_TO_MATERIALIZE) exists, and the UI renders it
(`AssetEventList.tsx`: `case 'FailedToMaterializeEvent': <Icon name="run_failed" color={Colors.accentRed()} />`),
but no open-source code path emits it when a step of a planned asset fails, and
`EventLogStorage.can_store_asset_failure_events` is False for the SQLite and PostgreSQL storages, so
`DagsterInstance.store_event` would drop it anyway.

Proposed: emit ASSET_FAILED_TO_MATERIALIZE for each planned, unmaterialized asset of a failed step (its
`Failure`'s description and metadata on it) and store it in the SQL storages, or let a step log an
`AssetMaterializationFailure` itself (public, like `AssetObservation`).
"""

import sys
import tempfile

from dagster import (
    AssetExecutionContext,
    AssetKey,
    AssetObservation,
    AssetRecordsFilter,
    DagsterInstance,
    Failure,
    asset,
    materialize,
)

KEY = AssetKey("attempted_work")


@asset(name="attempted_work")
def attempted_work(context: AssetExecutionContext) -> None:
    context.log_event(AssetObservation(asset_key=KEY, description="attempt 1 did not complete",
                                       metadata={"result": "verification_failed"}))
    raise Failure(description="attempt 1 did not complete: verification failed", allow_retries=False)


def main() -> int:
    import dagster

    with tempfile.TemporaryDirectory() as home, DagsterInstance.local_temp(home) as instance:  # SQLite
        result = materialize([attempted_work], instance=instance, raise_on_error=False)
        failed = instance.fetch_failed_materializations(AssetRecordsFilter(asset_key=KEY), limit=10).records
        observed = instance.fetch_observations(AssetRecordsFilter(asset_key=KEY), limit=10).records
        storage = instance.event_log_storage
        can_store = storage.can_store_asset_failure_events
    print(f"dagster {dagster.__version__}, {type(storage).__name__}: the run succeeded: {result.success}; "
          f"failed-materialization records: {len(failed)}; observations: {len(observed)}; "
          f"storage.can_store_asset_failure_events: {can_store}")
    if not result.success and not failed and observed:
        print("REPRODUCED: the asset's failed step left no failed-materialization event: its Events list shows only "
              "the observation, with the green icon of a success")
        return 0
    print("not reproduced: a failed materialization is stored")
    return 1


if __name__ == "__main__":
    sys.exit(main())
