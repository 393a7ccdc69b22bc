"""The step processes of a parallel run start with the packet's job built: the forkserver they fork from built
it once (step_preload.py) before the first step, so no step loads and compiles the packet again. A forkserver
built for another run (a second `run` in one process) leaves each step to build its own job, as before.

Each run is its own Python process here (a forkserver lives as long as the process that started it), and
the builds are seen through a translator that notes the pid of every process that makes the packet's keys."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from dag_packets import write_dag_packet
from dagster import DagsterEventType, DagsterInstance
from dagster._serdes import serialize_value

TESTS = Path(__file__).resolve().parent.parent
TRANSLATOR = "translators.RecordingKeys"
# Two runs of one packet's two independent prompts in one process, then the builds' pids by packet name.
SCRIPT = """
import sys
from awp_pipelines import api
for packet in sys.argv[2:]:
    result = api.run(packet, instance=sys.argv[1], translator="translators.RecordingKeys", parallel=4)
    assert [o.state for o in result.outcomes] == ["completed", "completed"], result.outcomes
"""


def _step_pids(instance_dir: Path) -> dict[str, set[int]]:
    """Per packet (job name), the pids of its runs' step processes (Dagster's STEP_WORKER_STARTED)."""
    instance = DagsterInstance.from_config(str(instance_dir))
    try:
        found: dict[str, set[int]] = {}
        for run in instance.get_runs():
            for record in instance.get_records_for_run(run.run_id, of_type=DagsterEventType.STEP_WORKER_STARTED
                                                       ).records:
                event = record.event_log_entry.dagster_event
                assert event is not None
                found.setdefault(run.job_name, set()).add(int(event.event_specific_data.metadata["pid"].value))
        return found
    finally:
        instance.dispose()


def _run(tmp_path: Path, packets: list[Path]) -> tuple[dict[str, set[int]], dict[str, set[int]]]:
    """(the processes that built each packet's job, each packet's step processes)."""
    builds = tmp_path / "builds.txt"
    env = {**os.environ, "AWP_TEST_BUILDS": str(builds),
           "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "instance"), *map(str, packets)],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    built: dict[str, set[int]] = {}
    for line in builds.read_text(encoding="utf-8").splitlines():
        pid, name = line.split()
        built.setdefault(name, set()).add(int(pid))
    return built, {job.removeprefix("packet__").split("__")[0]: pids
                   for job, pids in _step_pids(tmp_path / "instance").items()}


def test_the_steps_find_the_job_the_forkserver_built_and_build_it_themselves_when_it_is_another(
        tmp_path: Path) -> None:
    first = write_dag_packet(tmp_path / "first", {"01": "a", "02": "b"}, delay_ms=500, name="first")
    second = write_dag_packet(tmp_path / "second", {"01": "a", "02": "b"}, delay_ms=500, name="second")
    built, steps = _run(tmp_path, [first, second])
    assert set(steps) == {"first", "second"} and all(len(pids) == 2 for pids in steps.values()), steps
    # The first run's steps forked from a forkserver that had built its job: none of them built it.
    assert built["first"] and not steps["first"] & built["first"], (built, steps)
    # The forkserver's job is the first packet's: the second run's steps built theirs, and both prompts completed.
    assert steps["second"] <= built["second"], (built, steps)


def test_the_preload_builds_the_named_job_drops_the_variable_and_survives_a_bad_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the forkserver runs at its start: the job named in the variable is built (and kept by JobSource),
    the variable is gone for the agents the steps start, and a job that cannot be built leaves the forkserver
    alive (each step then builds it and reports the error itself)."""
    from dagster import build_reconstructable_job

    from awp_pipelines.dagster_compat.executor import PRELOAD_JOB_ENV, build_preloaded_job
    from awp_pipelines.orchestration.driver import parallel

    packet = write_dag_packet(tmp_path / "dag", {"01": "a", "02": "b"}, name="preload")
    source = parallel.JobSource(str(packet), build="test").to_json()
    recon = build_reconstructable_job(parallel.__name__, "packet_job", (source,))
    parallel.packet_job.cache_clear()
    monkeypatch.setenv(PRELOAD_JOB_ENV, serialize_value(recon))
    build_preloaded_job()
    assert PRELOAD_JOB_ENV not in os.environ
    assert parallel.packet_job.cache_info().currsize == 1
    parallel.packet_job(source)
    assert parallel.packet_job.cache_info().hits >= 1  # the step's own call finds it built
    shutil.rmtree(packet)  # the packet is gone: its job cannot be built again
    parallel.packet_job.cache_clear()
    for bad in ("not json", serialize_value(recon)):
        monkeypatch.setenv(PRELOAD_JOB_ENV, bad)
        build_preloaded_job()  # no exception
        assert PRELOAD_JOB_ENV not in os.environ
    assert parallel.packet_job.cache_info().currsize == 0


def test_the_forkserver_reads_dagsters_migration_scripts_once_for_every_instance_opened_after(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each opening of the instance checks its schema revision against the migration scripts; after the
    preload they are read once, and the check still finds the database at the head revision."""
    from alembic.script import ScriptDirectory
    from dagster._core.storage import sql

    from awp_pipelines.dagster_compat import migrations as storage
    from awp_pipelines.orchestration.ledger.instance import open_instance_folder

    monkeypatch.setattr(sql, "ScriptDirectory", ScriptDirectory)  # put back after the test
    monkeypatch.setattr(storage._MigrationsReadOnce, "_read", {})
    reads: list[str] = []
    real = ScriptDirectory.from_config
    monkeypatch.setattr(ScriptDirectory, "from_config",
                        classmethod(lambda cls, config: reads.append("read") or real(config)))
    instance = open_instance_folder(tmp_path / "home")  # a new one: alembic reads them to stamp it
    reads.clear()
    storage.read_migrations_once()
    assert reads == ["read"]
    reads.clear()
    try:
        for _ in range(3):
            DagsterInstance.from_ref(instance.get_ref()).dispose()
        with instance.run_storage.connect() as conn:  # type: ignore[attr-defined]
            db_revision, head = sql.check_alembic_revision(sql.get_alembic_config(sql.__file__), conn)
    finally:
        instance.dispose()
    assert reads == []  # three openings, none read them again
    assert head is not None and db_revision == head


def test_every_module_the_forkserver_imports_for_the_steps_exists_in_this_dagster() -> None:
    """The forkserver skips a preload it cannot import: a name Dagster dropped would silently cost each step
    its import again. Each is found, and the preload list names them before the job's build."""
    import importlib

    from awp_pipelines.dagster_compat.executor import STEP_IMPORTS
    from awp_pipelines.orchestration.compute.step_executor import STEP_PRELOAD

    for name in STEP_IMPORTS:
        importlib.import_module(name)
    assert STEP_PRELOAD[-1] == "awp_pipelines.orchestration.compute.step_preload"
    assert set(STEP_IMPORTS) <= set(STEP_PRELOAD)
