"""The forkserver preload of bench/private_speedups.py's `migrations` variant: the step preload
(awp_pipelines/orchestration/compute/step_preload.py) without the migration scripts read once, so each step reads them
as Dagster does."""

from awp_pipelines.dagster_compat.executor import build_preloaded_job

build_preloaded_job()
