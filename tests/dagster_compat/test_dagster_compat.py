"""Upgrade canaries: one test per private Dagster name awp_pipelines/dagster_compat/ uses. Each fails, naming the
private name, when a Dagster release moves, renames or reshapes it, so an upgrade (or the oldest release of the
supported range, tests/oldest_dagster.sh) says what to fix before any run does. And the proof that they are
private only where used: awp_pipelines imports whole with every one of them gone."""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys

import pytest
from repo_paths import REPO_ROOT

from awp_pipelines.dagster_compat.log_mirrors import _OwnGroupSubprocess


def private(path: str) -> object:
    """`module:attribute` (or a module alone) from Dagster's private packages, or a failure naming it."""
    module_name, _, attribute = path.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        pytest.fail(f"Dagster's private module {module_name} is gone ({error}): update awp_pipelines/dagster_compat/")
    if not attribute:
        return module
    if not hasattr(module, attribute):
        pytest.fail(f"Dagster's private name {path} is gone: update awp_pipelines/dagster_compat/")
    return getattr(module, attribute)


def columns(path: str, *names: str) -> None:
    table = private(path)
    missing = [name for name in names if name not in table.c]  # type: ignore[attr-defined]
    assert not missing, f"Dagster's table {path} lost the columns {missing} AWP's own SQL reads or writes"


# Every private name the compat package uses, by its module (the boundary test keeps them there).
PRIVATE_NAMES = {
    "events": ["dagster._core.storage.event_log.sql_event_log:SqlEventLogStorage",
               "dagster._core.storage.event_log.schema:SqlEventLogStorageTable",
               "dagster._core.storage.sqlalchemy_compat:db_select", "dagster._core.events:StepMaterializationData",
               "dagster._core.events:AssetObservationData"],
    "kvs": ["dagster._core.storage.runs.sql_run_storage:SqlRunStorage",
            "dagster._core.storage.runs.schema:KeyValueStoreTable"],
    "pools": ["dagster._core.storage.event_log.sql_event_log:SqlEventLogStorage",
              "dagster._core.storage.event_log.schema:ConcurrencySlotsTable",
              "dagster._core.storage.event_log.schema:PendingStepsTable",
              "dagster._core.storage.sqlalchemy_compat:db_select"],
    "config_schema": ["dagster._core.definitions.definition_config_schema:DefinitionConfigSchema"],
    "executor": ["dagster._core.definitions.reconstruct:ReconstructableJob", "dagster._core.executor.multiprocess"],
    "migrations": ["dagster._core.storage.sql:ScriptDirectory", "dagster._core.storage.sql:get_alembic_config"],
    "execution": ["dagster._core.execution.api:execute_run", "dagster._core.events:RunFailureReason",
             "dagster._core.execution.execution_result:ExecutionResult",
             "dagster._core.definitions.unresolved_asset_job_definition:UnresolvedAssetJobDefinition"],
    "embedded_instance": ["dagster._core.run_coordinator:DefaultRunCoordinator",
                          "dagster._core.storage.event_log:ConsolidatedSqliteEventLogStorage",
                          "dagster._core.storage.event_log.sqlite.consolidated_sqlite_event_log",
                          "dagster._core.storage.sql:stamp_alembic_rev"],
    "log_mirrors": ["dagster._core.execution.compute_logs:subprocess"],
    "console_level": ["dagster._core.execution.context_creation_job:default_system_loggers"],
}


@pytest.mark.parametrize("concern", sorted(PRIVATE_NAMES))
def test_each_private_name_the_compat_package_uses_exists(concern: str) -> None:
    for path in PRIVATE_NAMES[concern]:
        private(path)


def test_the_compat_package_uses_no_private_name_the_canaries_do_not_list() -> None:
    """A new private import in the compat package needs its canary: every `dagster._` module it imports is
    listed above."""
    import ast

    listed = {path.partition(":")[0] for paths in PRIVATE_NAMES.values() for path in paths}
    used: set[str] = set()
    for file in (REPO_ROOT / "awp_pipelines" / "dagster_compat").glob("*.py"):
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("dagster._"):
                used |= {f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in listed else node.module
                         for a in node.names}
    assert sorted(used - listed) == []


def test_awp_sql_finds_the_columns_it_reads_and_writes() -> None:
    """events.py, kvs.py and pools.py write SQL over Dagster's own tables: each column they name."""
    columns("dagster._core.storage.event_log.schema:SqlEventLogStorageTable",
            "id", "run_id", "asset_key", "event", "dagster_event_type")
    columns("dagster._core.storage.runs.schema:KeyValueStoreTable", "key", "value")
    columns("dagster._core.storage.event_log.schema:ConcurrencySlotsTable",
            "id", "concurrency_key", "run_id", "step_key", "deleted")
    columns("dagster._core.storage.event_log.schema:PendingStepsTable", "id", "concurrency_key", "run_id",
            "step_key", "priority", "assigned_timestamp", "create_timestamp")


def test_the_stored_event_json_still_has_the_shape_events_decodes() -> None:
    """events._stored_metadata decodes Dagster's serdes JSON of a materialization itself."""
    from dagster import AssetKey, AssetMaterialization, DagsterEvent, DagsterEventType, EventLogEntry, serialize_value

    from awp_pipelines.dagster_compat.events import _stored_metadata

    data = private("dagster._core.events:StepMaterializationData")
    event = DagsterEvent(event_type_value=DagsterEventType.ASSET_MATERIALIZATION.value, job_name="job",
                         event_specific_data=data(AssetMaterialization(  # type: ignore[operator]
                             AssetKey("k"), metadata={"awp/text": "t", "awp/n": 3, "awp/record": {"a": 1}})))
    entry = EventLogEntry(error_info=None, level=20, user_message="", run_id="r", timestamp=0.0,
                          dagster_event=event)
    assert _stored_metadata(serialize_value(entry)) == {"awp/text": "t", "awp/n": 3, "awp/record": {"a": 1}}


def test_dagsters_own_tag_names_are_spelled_as_awp_spells_them() -> None:
    from awp_pipelines.dagster_compat import tags

    for ours, theirs in [(tags.ROOT_RUN_ID_TAG, "ROOT_RUN_ID_TAG"), (tags.PARENT_RUN_ID_TAG, "PARENT_RUN_ID_TAG"),
                         (tags.SENSOR_NAME_TAG, "SENSOR_NAME_TAG"),
                         (tags.REPOSITORY_LABEL_TAG, "REPOSITORY_LABEL_TAG"),
                         (next(iter(tags.WORKER_LOSS_ONLY)), "RETRY_ON_ASSET_OR_OP_FAILURE_TAG")]:
        assert ours == private(f"dagster._core.storage.tags:{theirs}"), f"dagster._core.storage.tags.{theirs}"
    code_references = private("dagster._core.definitions.metadata.source_code:CodeReferencesMetadataSet")
    assert f"{code_references.namespace()}/code_references" == tags.CODE_REFERENCES_KEY  # type: ignore[attr-defined]


def test_the_shared_config_schema_is_the_fast_one_and_dagster_keeps_it() -> None:
    """config_schema.py subclasses DefinitionConfigSchema so that multi_asset keeps one schema for every asset;
    the plain mapping it falls back to is correct but slower (the definitions bench)."""
    from awp_pipelines.orchestration.assets import ATTEMPT_CONFIG_SCHEMA

    base = private("dagster._core.definitions.definition_config_schema:DefinitionConfigSchema")
    assert isinstance(ATTEMPT_CONFIG_SCHEMA, base), "DefinitionConfigSchema: the fast path is off"  # type: ignore[arg-type]
    from dagster import AssetOut, multi_asset

    @multi_asset(outs={"a": AssetOut()}, config_schema=ATTEMPT_CONFIG_SCHEMA)
    def one(context):  # type: ignore[no-untyped-def]
        return None

    assert one.op.config_schema is ATTEMPT_CONFIG_SCHEMA, "multi_asset converts the schema again: no saving"


def test_the_migrations_patch_still_reaches_dagsters_revision_check() -> None:
    """migrations.py replaces ScriptDirectory inside Dagster's SQL module: Dagster must still look it up there."""
    sql = private("dagster._core.storage.sql")
    source = inspect.getsource(sql)  # type: ignore[arg-type]
    assert "ScriptDirectory.from_config" in source, "dagster._core.storage.sql no longer calls ScriptDirectory"


def test_a_run_with_no_logger_configured_logs_to_the_console_at_the_level_set_and_stores_every_line(
        capsys: pytest.CaptureFixture[str]) -> None:
    """console_level.py sets the level of Dagster's default console (the one a run whose run config names no logger
    gets: "Materialize all", a sensor's run request): DEBUG events and INFO lines leave the console, and still reach
    the run's event log. Without it the run printed every DEBUG event (`make ui`: 92 DEBUG lines for the demo)."""
    from dagster import DagsterInstance, Failure, job, op

    from awp_pipelines.dagster_compat.console_level import default_console_at

    creation = private("dagster._core.execution.context_creation_job")
    before = creation.default_system_loggers  # type: ignore[attr-defined]

    @op
    def speak(context) -> None:  # type: ignore[no-untyped-def]
        context.log.info("an info line")
        context.log.warning("a warning line")
        raise Failure(description="repair next: the demo's expected failure")

    @job
    def quiet() -> None:
        speak()

    try:
        default_console_at("WARNING")
        default_console_at("WARNING")  # idempotent: one wrapper over Dagster's own
        with DagsterInstance.ephemeral() as instance:
            run = quiet.execute_in_process(instance=instance, raise_on_error=False)
            stored = instance.all_logs(run.run_id)
    finally:
        creation.default_system_loggers = before  # type: ignore[attr-defined]
    printed = capsys.readouterr().err
    assert "a warning line" in printed and "an info line" not in printed and " - DEBUG - " not in printed
    # A failure on one line, its stack trace left to the run's page, where every line and event still is.
    [failed] = [line for line in printed.splitlines() if "STEP_FAILURE" in line]
    assert failed.endswith("(its stack trace: the run's page)") and "repair next: the demo's expected failure" in failed
    assert "Stack Trace" not in printed
    assert "an info line" in [e.user_message for e in stored]
    [failure] = [e for e in stored if e.dagster_event and e.dagster_event.event_type_value == "STEP_FAILURE"]
    assert failure.dagster_event.step_failure_data.error.stack  # type: ignore[union-attr]


def test_the_log_mirrors_are_started_through_the_module_attribute_awp_patches() -> None:
    """log_mirrors.py swaps `subprocess` in Dagster's compute_logs module: its mirrors must still start there."""
    compute_logs = private("dagster._core.execution.compute_logs")
    # The module itself, or AWP's wrapper when an `awp run` in this process already patched it.
    assert compute_logs.subprocess is subprocess or isinstance(  # type: ignore[attr-defined]
        compute_logs.subprocess, _OwnGroupSubprocess)  # type: ignore[attr-defined]
    assert "subprocess.Popen(" in inspect.getsource(compute_logs)  # type: ignore[arg-type]


def test_execute_run_still_takes_the_arguments_awp_passes() -> None:
    execute_run = private("dagster._core.execution.api:execute_run")
    assert {"raise_on_error"} <= set(inspect.signature(execute_run).parameters)  # type: ignore[arg-type]
    reason = private("dagster._core.events:RunFailureReason")
    assert hasattr(reason, "UNEXPECTED_TERMINATION"), "dagster._core.events.RunFailureReason.UNEXPECTED_TERMINATION"


# A rename upstream, simulated: every import of a `dagster._` module by an AWP module fails (Dagster's own
# imports of its modules go on), then every module of the package is imported, the definitions built.
_RENAMED_UPSTREAM = """
import builtins, importlib, pkgutil
real = builtins.__import__

def renamed(name, globals=None, locals=None, fromlist=(), level=0):
    if (globals or {}).get("__name__", "").startswith("awp_pipelines") and name.startswith("dagster._"):
        raise ImportError(name + " (renamed upstream, in this test)")
    return real(name, globals, locals, fromlist, level)

builtins.__import__ = renamed
import awp_pipelines
for info in pkgutil.walk_packages(awp_pipelines.__path__, "awp_pipelines."):
    importlib.import_module(info.name)
from awp_pipelines.dagster_compat.config_schema import _shared_schema_class
from awp_pipelines.orchestration.assets import ATTEMPT_CONFIG_SCHEMA
print("imported", _shared_schema_class() is None, type(ATTEMPT_CONFIG_SCHEMA).__name__)
"""


def test_awp_pipelines_imports_whole_when_every_private_name_is_renamed_upstream() -> None:
    """Nothing private is imported when a module loads: a rename upstream fails the function that uses it (and
    its canary above), never `import awp_pipelines` or the code location's load (awp_pipelines.orchestration.definitions
    builds the demo's definitions); the shared config schema then falls back to a plain mapping."""
    done = subprocess.run([sys.executable, "-c", _RENAMED_UPSTREAM], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith("imported True dict")
