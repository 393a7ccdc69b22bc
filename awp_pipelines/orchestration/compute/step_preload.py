"""Imported by the forkserver of a parallel run before it forks any step process (parallel.py names it among
its preload modules): it builds the run's job there once, so that no step process loads, compiles and
resolves the packet again (in each of eight steps at once on two cores, a second of start each), and reads
Dagster's migration scripts once, which each step's opening of the instance would read again."""

from awp_pipelines.dagster_compat.executor import build_preloaded_job
from awp_pipelines.dagster_compat.migrations import read_migrations_once

read_migrations_once()
build_preloaded_job()
