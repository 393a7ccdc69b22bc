"""The shared deployment's instance config (dagster.yaml) and code location (workspace.yaml)."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa
import yaml
from dagster import AssetKey, DagsterRunStatus, QueuedRunCoordinator, RunsFilter, asset, materialize
from dagster._config import Shape, process_config
from dagster._core.instance.config import dagster_instance_config
from dagster._core.test_utils import instance_for_test
from dagster_postgres import PostgresEventLogStorage, PostgresRunStorage
from dagster_postgres.utils import pg_config, pg_url_from_config
from repo_paths import REPO_ROOT

PG_ENV_VARS = ("AWP_PG_USER", "AWP_PG_PASSWORD", "AWP_PG_HOST", "AWP_PG_DB", "AWP_PG_PORT")


def _dagster_yaml() -> dict[str, Any]:
    return yaml.safe_load((REPO_ROOT / "dagster.yaml").read_text())


@pytest.mark.postgres
def test_dagster_yaml_stores_runs_and_materializations_in_postgres(
    fresh_pg_database: sa.URL, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = fresh_pg_database
    monkeypatch.setenv("AWP_PG_USER", db.username or "")
    monkeypatch.setenv("AWP_PG_PASSWORD", db.password or "")
    monkeypatch.setenv("AWP_PG_HOST", db.host or "")
    monkeypatch.setenv("AWP_PG_DB", db.database or "")
    monkeypatch.setenv("AWP_PG_PORT", str(db.port or 5432))
    config = _dagster_yaml()

    @asset
    def deployment_probe() -> int:
        return 1

    with instance_for_test(overrides=config) as instance:
        assert isinstance(instance.run_storage, PostgresRunStorage)
        assert isinstance(instance.event_log_storage, PostgresEventLogStorage)
        assert isinstance(instance.run_coordinator, QueuedRunCoordinator)
        result = materialize([deployment_probe], instance=instance, tags={"awp/account": "probe"})
        assert result.success
        run_id = result.run_id

    # A second instance built from the same file sees the run: it was stored in PostgreSQL, not in memory.
    with instance_for_test(overrides=config) as reader:
        [run] = reader.get_runs(filters=RunsFilter(run_ids=[run_id]))
        assert run.status == DagsterRunStatus.SUCCESS
        assert run.tags["awp/account"] == "probe"
        materialization = reader.get_latest_materialization_event(AssetKey("deployment_probe"))
        assert materialization is not None
        assert materialization.run_id == run_id

    engine = sa.create_engine(db, poolclass=sa.pool.NullPool)
    with engine.connect() as conn:
        stored = conn.execute(sa.text("SELECT status FROM runs WHERE run_id = :id"), {"id": run_id}).scalar()
    engine.dispose()
    assert stored == "SUCCESS"


def test_dagster_yaml_declares_psycopg2_storage_and_one_run_per_account(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    config = _dagster_yaml()

    postgres_db = config["storage"]["postgres"]["postgres_db"]
    assert postgres_db["scheme"] == "postgresql+psycopg2"
    env_fields = ("username", "password", "hostname", "db_name", "port")
    assert {field: postgres_db[field] for field in env_fields} == {
        "username": {"env": "AWP_PG_USER"},
        "password": {"env": "AWP_PG_PASSWORD"},
        "hostname": {"env": "AWP_PG_HOST"},
        "db_name": {"env": "AWP_PG_DB"},
        "port": {"env": "AWP_PG_PORT"},
    }
    assert config["run_coordinator"]["class"] == "QueuedRunCoordinator"
    assert {"key": "awp/account", "value": {"applyLimitPerUniqueValue": True}, "limit": 1} in config[
        "concurrency"
    ]["runs"]["tag_concurrency_limits"]
    assert config["concurrency"]["pools"]["default_limit"] == 1
    assert config["run_monitoring"]["enabled"] is True
    assert config["telemetry"]["enabled"] is False

    # And Dagster accepts the file: its instance schema, then the storage section resolved from the env
    # into the URL that dagster-postgres connects to.
    validated, _ = dagster_instance_config(str(REPO_ROOT))
    assert validated["concurrency"]["runs"]["tag_concurrency_limits"][0]["key"] == "awp/account"
    for var in PG_ENV_VARS:
        monkeypatch.setenv(var, var.lower())
    monkeypatch.setenv("AWP_PG_PORT", "6543")
    resolved = process_config(Shape(pg_config()), validated["storage"]["postgres"])
    assert resolved.success, resolved.errors
    assert pg_url_from_config(resolved.value) == (
        "postgresql+psycopg2://awp_pg_user:awp_pg_password@awp_pg_host:6543/awp_pg_db"
    )


def test_workspace_yaml_loads_the_awp_pipelines_code_location() -> None:
    workspace = yaml.safe_load((REPO_ROOT / "workspace.yaml").read_text())

    assert workspace == {
        "load_from": [
            {
                "python_module": {
                    "module_name": "awp_pipelines.orchestration.definitions",
                    "working_directory": ".",
                    "location_name": "awp_pipelines",
                }
            }
        ]
    }
