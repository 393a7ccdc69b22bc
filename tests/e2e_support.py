"""Helpers for end-to-end tests: run the CLI, read git history, write overlays and Postgres homes."""

from __future__ import annotations

import multiprocessing
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
import yaml
from click.testing import CliRunner, Result

from awp_pipelines.cli import cli

if TYPE_CHECKING:
    from dagster import DagsterInstance, DagsterRun, EventLogEntry

    from awp_pipelines.core.engine.attempt_record import AttemptRecord


def awp(*args: str | Path) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def stored_attempts(packet: Path, packet_run: str, prompt: str = "01") -> list[AttemptRecord]:
    """The AgentRun's Attempt records as stored in the packet's embedded instance (not inferred), oldest first."""
    from awp_pipelines.core.packet.packet import load_packet
    from awp_pipelines.orchestration.ledger.factory import open_ledger
    from awp_pipelines.orchestration.ledger.instance import instance_home
    from awp_pipelines.orchestration.views.standing import agent_run_records

    with open_ledger(instance_home(packet)) as (ledger, _):
        return agent_run_records(ledger, load_packet(packet), packet_run, prompt)


def runs_of_packet(instance: DagsterInstance, packet: str,
                   statuses: Sequence[object] | None = None) -> list[DagsterRun]:
    """The packet's runs in the instance, newest first (its packet index, then their runs by tag)."""
    from awp_pipelines.orchestration.ledger.instance_ledger import InstanceLedger

    return InstanceLedger(instance).runs_of_packet(packet, statuses)


def attempt_records(instance: DagsterInstance, run_id: str) -> list[AttemptRecord]:
    """Every Attempt record one run stored, in order."""
    from awp_pipelines.orchestration.ledger.instance_ledger import InstanceLedger

    return InstanceLedger(instance).attempt_records(run_id)


def prompt_of(run: Any) -> str:
    """The prompt id of a run of one prompt (or a request for one), from its asset selection."""
    [key] = run.asset_selection
    return str(key.path[-1].split("_", 1)[0])


def decided_launch(run: Any) -> tuple[str, str, str | None]:
    """(prompt id, mode, account) of a run of one prompt, or a sensor's request for one, that its launcher
    decided: the prompt from its asset selection, the rest from its run config (the run tags leave them out)."""
    [op] = run.run_config["ops"].values()
    return prompt_of(run), op["config"]["mode"], op["config"].get("account")


def decided_attempt(run: Any) -> str | None:
    """The Attempt id a launcher decided for a run of one prompt (its packet-run tag, prompt, config number)."""
    ops = (run.run_config or {}).get("ops") or {}
    number = next((int(op["config"]["number"]) for op in ops.values() if op.get("config", {}).get("number")), 0)
    return f"{run.tags['awp/packet_run']}.{prompt_of(run)}.a{number}" if number else None


def stored_events(packet: Path) -> list[EventLogEntry]:
    """Every event row of every run in the packet's own embedded instance (`.awp/dagster`), run by run."""
    from awp_pipelines.orchestration.ledger.instance import open_instance

    folder = packet / ".awp" / "dagster"
    instance = open_instance(folder, folder)
    try:
        return [e for run in instance.get_runs() for e in instance.all_logs(run.run_id)]
    finally:
        instance.dispose()


def sent_prompt(record: dict) -> str:
    """The prompt an Attempt sent its agent (repair instructions included), from its events (`prompt_sent`,
    redacted like every event): the record does not store it again. Empty when its agent was not asked."""
    from awp_pipelines.core.records.events import iter_events

    path = Path(record.get("events_file") or "")
    if not record.get("events_file") or not path.is_file():
        return ""
    attempt = record["identity"]["attempt_id"]
    return "".join(str(e.get("text") or "") for e in iter_events(path)
                   if e.get("type") == "prompt_sent" and e.get("attempt") == attempt)


def stored_records(packet: Path, packet_run: str, prompt: str = "01") -> list[dict]:
    """The same records as JSON."""
    return [r.model_dump(mode="json") for r in stored_attempts(packet, packet_run, prompt)]


def git_log(repo: Path) -> list[str]:
    """Full commit messages, newest first."""
    out = subprocess.run(["git", "-C", str(repo), "log", "--format=%B%x00"], check=True, capture_output=True,
                         text=True).stdout
    return [m.strip() for m in out.split("\x00") if m.strip()]


def git_status(repo: Path) -> str:
    return subprocess.run(["git", "-C", str(repo), "status", "--porcelain"], check=True, capture_output=True,
                          text=True).stdout


def write_overlay(path: Path, overlay: dict[str, object]) -> Path:
    path.write_text(yaml.safe_dump(overlay), encoding="utf-8")
    return path


def postgres_instance_dir(folder: Path, db: sa.URL) -> Path:
    """A Dagster home whose dagster.yaml stores everything in the given PostgreSQL database."""
    folder.mkdir(parents=True, exist_ok=True)
    config = {"storage": {"postgres": {"postgres_db": {
        "username": db.username, "password": db.password or "", "hostname": db.host, "db_name": db.database,
        "port": db.port or 5432, "scheme": "postgresql+psycopg2"}}}, "telemetry": {"enabled": False}}
    (folder / "dagster.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    return folder


@contextmanager
def fresh_database(server_url: str | sa.URL, prefix: str = "awp_deploy") -> Iterator[sa.URL]:
    """A database of its own on the server, dropped afterwards (tests run concurrently; benches start clean)."""
    server = sa.make_url(server_url)
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(server, isolation_level="AUTOCOMMIT", poolclass=sa.pool.NullPool)
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    try:
        yield server.set(database=name)
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def race_processes(target: Callable[..., None], args: Callable[[int, float, Any], tuple[Any, ...]],
                   count: int = 4) -> list[Any]:
    """`count` spawned processes run `target(*args(n, start_at, queue))`, each waiting for `start_at` (after
    every one has imported Dagster) to race; returns what each put on the queue."""
    context = multiprocessing.get_context("spawn")
    answers: multiprocessing.Queue = context.Queue()
    start_at = time.time() + 8
    procs = [context.Process(target=target, args=args(n, start_at, answers)) for n in range(count)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=120)
        assert proc.exitcode == 0
    return [answers.get(timeout=5) for _ in procs]
