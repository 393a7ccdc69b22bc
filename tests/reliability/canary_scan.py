"""The canary scan of the secrets tests: every place a run or a command may leave text (database tables,
files, git objects, command output) read as text, and the canaries (reliability/canaries.py) counted in it,
whole or slugged into a name (`canary_in_use_7f3a…`, as a check name holds it)."""

from __future__ import annotations

import contextlib
import re
import subprocess
import zlib
from collections.abc import Iterator
from pathlib import Path

import sqlalchemy as sa
import yaml
from reliability.canaries import ENV, PATTERN_SECRET, PROVIDERS, SECRETS


def stored_text(value: object) -> str:
    """A stored value as text; zlib-compressed blobs (Dagster's snapshots) decompressed first."""
    if isinstance(value, bytes | memoryview):
        raw = bytes(value)
        with contextlib.suppress(zlib.error):
            raw = zlib.decompress(raw)
        return raw.decode("utf-8", errors="replace")
    return "" if value is None else str(value)


def tables(engine: sa.Engine, label: str) -> Iterator[tuple[str, str]]:
    """(`label:table`, every row of it as text) for every table the database has."""
    meta = sa.MetaData()
    meta.reflect(bind=engine)
    with engine.connect() as conn:
        for table in meta.sorted_tables:
            rows = conn.execute(sa.select(table)).fetchall()
            yield f"{label}:{table.name}", "\n".join(" ".join(stored_text(v) for v in row) for row in rows)


def sqlite_dumps(folder: Path) -> Iterator[tuple[str, str]]:
    for db in sorted(folder.rglob("*.db")):
        engine = sa.create_engine(f"sqlite:///{db}", poolclass=sa.pool.NullPool)
        try:
            yield from tables(engine, db.relative_to(folder).as_posix())
        finally:
            engine.dispose()


def files(folder: Path) -> Iterator[tuple[str, str]]:
    """Every file's raw bytes (SQLite files too: a freed page keeps what a row once held)."""
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        yield f"file {path.relative_to(folder.parent).as_posix()}", path.read_bytes().decode("utf-8", "replace")


def git_objects(repo: Path) -> str:
    return subprocess.run(["git", "cat-file", "--batch-all-objects", "--batch"], cwd=repo, check=True,
                          capture_output=True).stdout.decode("utf-8", errors="replace")


def slugged(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower())


# What finds a canary, whole or slugged into a name: the slug of a literal's last 12 characters (its random part);
# for the pattern secret, its key-shaped prefix and first random character (its tail alone is in ECHO's argv, in
# the packet by construction: no pattern finds it there).
_NEEDLES = {secret: slugged(secret)[-12:] for secret in SECRETS} | {PATTERN_SECRET: slugged(PATTERN_SECRET)[:14]}


def count_canaries(places: dict[str, str]) -> dict[str, dict[str, int]]:
    """{place: {canary: copies}} of every place that holds one."""
    found = {}
    for place, text in places.items():
        text = slugged(text)
        found[place] = {c: text.count(needle) for c, needle in _NEEDLES.items() if needle in text}
    return {place: counts for place, counts in found.items() if counts}


def side_door_catalog(folder: Path) -> Path:
    """The canaries' catalog (canaries.PROVIDERS) plus a `command` agent `cmd` that says every canary credential
    its environment holds, on `--version` too: what `awp doctor` would print if it handed it one."""
    folder.mkdir(parents=True, exist_ok=True)
    agent = folder / "say-credentials"
    names = " ".join(f"${name}" for name in ENV)
    agent.write_text(f'#!/bin/sh\necho "say-credentials 1.0 {names}"\ncat >/dev/null\n')
    agent.chmod(0o755)
    catalog = yaml.safe_load(PROVIDERS)
    catalog["providers"]["cmd"] = {"kind": "command", "command": str(agent), "credential_env": "AWP_TEST_PROVIDER_KEY"}
    catalog["accounts"]["cmd-in-use"] = {"provider": "cmd", "credential_env": "AWP_TEST_CANARY_IN_USE"}
    file = folder / "providers.yaml"
    file.write_text(yaml.safe_dump(catalog))
    return file


def awp_outputs(*commands: list[str]) -> dict[str, str]:
    """{`awp ARGS`: what it printed (stdout and stderr)} for each command, run in this process as a user runs it
    (the environment as it is: the canaries in it)."""
    from click.testing import CliRunner

    from awp_pipelines.cli import cli

    outputs = {}
    for args in commands:
        result = CliRunner().invoke(cli, args)
        shown = " ".join(args)
        outputs[f"awp {shown}"] = result.stdout + result.stderr + (repr(result.exception) if result.exception and
                                                                   not isinstance(result.exception, SystemExit)
                                                                   else "")
    return outputs


def every_command(packet: Path, providers: Path, instance: Path, file: Path | None = None) -> list[list[str]]:
    """Every `awp` command a user runs on `packet` (its instance and catalog given), text and --json: plan,
    run --dry-run, lint, verify, status, watch --once, doctor (the packet's agents and every configured one),
    repair, resume, schema, and blame of `file` (a committed file of the work tree)."""
    p, prov, inst = str(packet), ["--providers", str(providers)], ["--instance", str(instance)]
    commands = [["plan", p, *prov], ["plan", p, *prov, "--json"], ["run", p, *prov, "--dry-run"],
                ["run", p, *prov, "--dry-run", "--json"], ["lint", p, *prov], ["lint", p, *prov, "--json"],
                ["verify", p, *prov], ["verify", p, *prov, "--json"], ["status", p, *inst, *prov],
                ["status", p, *inst, *prov, "--json"], ["watch", p, *inst, *prov, "--once"],
                ["watch", p, *inst, *prov, "--once", "--json"], ["doctor", p, *inst, *prov],
                ["doctor", p, *inst, *prov, "--json"], ["doctor", *prov], ["doctor", *prov, "--json"],
                ["repair", p, "02", *inst, *prov, "--no-commit"], ["resume", p, *inst, *prov, "--lift-only"],
                ["schema"], ["schema", "status"]]
    if file is not None:
        commands += [["blame", str(file)], ["blame", str(file), "--json"]]
    return commands

