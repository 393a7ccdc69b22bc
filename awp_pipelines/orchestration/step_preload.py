"""Imported by the forkserver of a parallel run before it forks any step process (parallel.py names it among
its preload modules): it builds the run's job there once, so that no step process loads, compiles and
resolves the packet again (in each of eight steps at once on two cores, a second of start each)."""

from awp_pipelines.orchestration.storage import build_preloaded_job

build_preloaded_job()
