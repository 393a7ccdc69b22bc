"""The sandbox's attack table past one machine (tests/e2e/test_docker_runs.py, test_celery_runs.py), on the
rows, agent and judging of tests/attack_support.py: the attacked packet in a project, the storage settings
read from the environment as deploy/'s instance configs read them (so the run worker holds
AWP_PG_PASSWORD), and one more row, the instance's PostgreSQL, reached by TCP."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
import yaml
from attack_support import ROWS, SECRET, add_remote, command_provider, plant_canaries, targets

from tests.daemon.deployment import init_workspaces, make_project

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
# The instance is PostgreSQL here: no database file to open (instance_db), a server to reach (instance_pg).
REMOTE_ROWS = (*(r for r in ROWS if r != "instance_db"), "instance_pg")
# What deploy/'s instance configs read the storage from, by name.
STORAGE_ENV = ("AWP_PG_USER", "AWP_PG_PASSWORD", "AWP_PG_HOST", "AWP_PG_DB", "AWP_PG_PORT")


def attacked_project(tmp: Path, isolation: str, db: sa.URL, http_port: int) -> tuple[Path, Path, Path]:
    """(project, work tree, its remote): the attacked packet (`attacked`, on its `workspace` repo) in a project
    whose catalog is the attacking `command` agent; the canaries planted under `tmp`."""
    plant_canaries(tmp)
    source = tmp / "src" / "attacked"
    (source / "prompts").mkdir(parents=True)
    (source / "packet.yaml").write_text(yaml.safe_dump({
        "name": "attacked", "provider": "agent", "model": "m", "timeout": "3m", "accounts": ["a"],
        "isolation": isolation, "repos": {"app": {"path": "./workspace", "default": True}},
        "agent_control": {"enabled": True, "completion_verify": {"files_exist": ["work.txt"]}}}))
    body = f"{targets(tmp, tmp / 'dagster-home', http_port)}\nPG={db.host}:{db.port or 5432}"
    (source / "prompts" / "01_work.prompt.md").write_text(
        f"---\n{yaml.safe_dump({'verify': {'files_exist': ['work.txt']}})}---\n{body}\n")
    project = make_project(tmp / "project", {"attacked": source}, yaml.safe_dump(command_provider(tmp)))
    init_workspaces(project, ["attacked"])
    tree = project / "assets" / "attacked" / "workspace"
    return project, tree, add_remote(tree)


def storage_from_environment(config: dict[str, Any], db: sa.URL,
                             monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """`config` with deploy/'s storage (every setting `{env: AWP_PG_*}`), the password the canary (trust auth
    takes any), those variables and the agent account's credential set here, where the daemon, the workers
    and this test read them."""
    config["storage"] = yaml.safe_load((DEPLOY / "docker" / "dagster.yaml").read_text())["storage"]
    values = (db.username or "", SECRET, db.host or "", db.database or "", str(db.port or 5432))
    for name, value in zip(STORAGE_ENV, values, strict=True):
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWP_TEST_AGENT_KEY", "own-key")
    return config
