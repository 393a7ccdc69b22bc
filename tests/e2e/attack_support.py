"""The sandbox's attack table past one machine (tests/e2e/test_docker_runs.py, test_celery_runs.py): the attacked
packet as a project's packet, the storage settings read from the environment as deploy/ writes them (so the
run worker holds AWP_PG_PASSWORD), and the rows the agent wrote."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
import yaml

from tests.daemon.deployment import make_project
from tests.e2e.test_sandbox_attacks import ATTACKER, ROWS, SECRET, attack_packet

# The instance is PostgreSQL here: no database file to open (instance_db), a server to reach (instance_pg).
REMOTE_ROWS = (*(r for r in ROWS if r != "instance_db"), "instance_pg")
DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
# What the run worker's environment carries by name, as deploy/'s instance configs require.
STORAGE_ENV = ("AWP_PG_USER", "AWP_PG_PASSWORD", "AWP_PG_HOST", "AWP_PG_DB", "AWP_PG_PORT")


def attacked_project(tmp: Path, make_git_repo: Callable[[Path], Path], isolation: str, db: sa.URL) -> Path:
    """A project holding the attacked packet (`attacked`, its own work tree), the operator's HOME and the other
    account's folder with their canaries under `tmp`, and the instance's PostgreSQL as a target."""
    (tmp / "operator-home").mkdir()
    (tmp / "operator-home" / "canary.txt").write_text("operator's secret\n")
    (tmp / "accounts" / "b").mkdir(parents=True)
    (tmp / "accounts" / "b" / "canary.txt").write_text("account b's login\n")
    source = attack_packet(tmp / "p", make_git_repo, isolation)
    prompt = source / "prompts" / "01_work.prompt.md"
    prompt.write_text(prompt.read_text() + f"PG={db.host}:{db.port or 5432}\n")
    _commit(source, "the instance's database, to reach")
    providers = yaml.safe_dump({
        "providers": {"agent": {"kind": "command", "command": str(ATTACKER), "models": ["m"],
                                "config_dir_env": "AGENT_CONFIG_DIR"}},
        "accounts": {"a": {"provider": "agent", "credential_env": "AWP_TEST_AGENT_KEY",
                           "config_dir": str(tmp / "accounts" / "a")},
                     "b": {"provider": "agent", "config_dir": str(tmp / "accounts" / "b")}}})
    return make_project(tmp / "project", {"attacked": source}, providers=providers)


def _commit(repo: Path, message: str) -> None:
    subprocess.run(["git", "-C", str(repo), "commit", "-qam", message], check=True)


def storage_from_environment(config: dict[str, Any], db: sa.URL, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """`config` with deploy/'s storage (every setting `{env: AWP_PG_*}`), the password the canary (trust auth
    takes any), and those variables and the agent account's credential set here, where the daemon, the
    workers and this test read them."""
    config["storage"] = yaml.safe_load((DEPLOY / "docker" / "dagster.yaml").read_text())["storage"]
    values = (db.username or "", SECRET, db.host or "", db.database or "", str(db.port or 5432))
    for name, value in zip(STORAGE_ENV, values, strict=True):
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWP_TEST_AGENT_KEY", "own-key")
    return config


def attack_rows(project: Path, tmp: Path) -> dict[str, str]:
    """What each row got, as the agent wrote it in its work tree; a write outside is judged outside."""
    packet = project / "assets" / "attacked"
    rows = dict(line.split(": ", 1) for line in (packet / "attacks.txt").read_text().splitlines())
    rows["write_outside"] = "LEAK" if (tmp / "outside.txt").exists() else "denied"
    return rows
