"""Canary credentials through a whole `awp run`, then every other `awp` command on the packet (plan, lint,
verify, status, watch, doctor, blame, repair, resume, schema; text and --json), then a dump of everything
they left: every table of the Dagster storage (SQLite files or the Postgres database; snapshots
decompressed), every file under `.awp/` and the instance folder (events, transcripts, records, compute
logs), the run tags, every git object, what each command printed and every file under HOME, the XDG homes
and the AWP config and cache homes (the parse cache). No canary is anywhere.

The canaries are account credential values that match no secret pattern (the account in use, another account
of the catalog that the prompt never uses, the provider's key) and a pattern secret built at runtime. They are
placed in the agent's messages and its error, a verifier's output, a prompt body, a `commit:` message, a verify
command's argv and a `contains` text (both were slugged into check names). A canary counts wherever it is found,
whole or slugged (`canary_in_use_7f3a…`, as a name holds it). The same dump follows a run under a real
dagster-daemon, launched as the UI launches it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import sqlalchemy as sa
import yaml
from daemon.deployment import FINISHED, deployment, make_project
from dagster import DagsterInstance
from e2e_support import attempt_records, awp, postgres_instance_dir
from reliability.canaries import CANARY_IN_USE, CANARY_OTHER, CANARY_PROVIDER, PATTERN_SECRET, PROVIDERS
from reliability.canary_scan import (
    awp_outputs,
    count_canaries,
    every_command,
    files,
    git_objects,
    side_door_catalog,
    sqlite_dumps,
    tables,
)

from awp_pipelines.cli.serve_cmd import attempt_view
from awp_pipelines.cli_features.attempt_page import DagsterLinks, attempt_html
from awp_pipelines.orchestration.ledger.factory import ledger_of
from awp_pipelines.orchestration.ledger.instance import embedded_config, open_instance
from awp_pipelines.orchestration.views.attempt_pages import find_attempt

AWP = str(Path(sys.executable).parent / "awp")
ALL_SAID = f"{CANARY_IN_USE} {CANARY_OTHER} {CANARY_PROVIDER} {PATTERN_SECRET}"
LITERALS_SAID = f"{CANARY_IN_USE} {CANARY_OTHER} {CANARY_PROVIDER}"
# The verifier prints every canary; the pattern secret is put together by the shell, so no file has it.
ECHO = {"exec": "sh", "args": ["-c", 'echo "verifier saw $1 $2 $3 sk-ant-$4"', "sh", CANARY_IN_USE, CANARY_OTHER,
                               CANARY_PROVIDER, PATTERN_SECRET.removeprefix("sk-ant-")]}
# A credential in a verify command's argv and in a `contains` text: check names were slugged from both.
ARGV_CHECK = {"exec": "true", "args": ["--key", CANARY_IN_USE]}
CONTAINS_CHECK = {"path": "notes.md", "text": f"key {CANARY_OTHER}"}


def _packet(root: Path, make_git_repo: Callable[[Path], Path]) -> tuple[Path, Path]:
    """The packet and its simulate overlay (kept outside the packet: the pattern secret in it is the agent's
    output, which lint never sees). The literal canaries in the packet itself match no pattern: lint lets
    them through, as it would a real credential pasted into a prompt."""
    make_git_repo(root / "workspace")
    (root / "packet.yaml").write_text(yaml.safe_dump({
        "name": "canary", "provider": "sim-keyed", "model": "sim-keyed-1", "accounts": ["in-use"],
        "repos": {"app": {"path": "./workspace", "default": True}}}))
    (root / "prompts").mkdir()
    echo = ECHO
    (root / "prompts" / "01_write.prompt.md").write_text(textwrap.dedent(f"""\
        ---
        id: "01"
        commit: "feat: notes (in use {CANARY_IN_USE}, other {CANARY_OTHER}, provider {CANARY_PROVIDER})"
        verify:
          files_exist: [notes.md]
        ---
        Write notes. The deploy credential is {CANARY_IN_USE}; the other is {CANARY_OTHER}.
        """))
    failing = {**echo, "args": [echo["args"][0], echo["args"][1] + "; exit 1", *echo["args"][2:]]}
    fronts = {"02_check": {"id": "02", "verify": {"commands": [echo, failing, ARGV_CHECK],
                                                  "contains": [CONTAINS_CHECK]}},
              "03_refused": {"id": "03", "depends_on": ["01"]}}
    for name, front in fronts.items():
        (root / "prompts" / f"{name}.prompt.md").write_text(f"---\n{yaml.safe_dump(front)}---\nCheck.\n")
    overlay = root.parent / "overlay.yaml"
    overlay.write_text(yaml.safe_dump({
        "01": {"attempts": [{"messages": [f"agent output: {ALL_SAID}"],
                             "writes": [{"path": "notes.md", "text": "notes\n"}]}]},
        "02": {"attempts": [{"messages": [f"tool output: {ALL_SAID}"]}]},
        "03": {"attempts": [{"messages": ["trying"], "error": {"kind": "provider_auth_claim",
                                                               "message": f"401: key rejected: {ALL_SAID}"}}]}}))
    return root, overlay


def _attempt_pages(instance: DagsterInstance, attempts: list[str]) -> dict[str, str]:
    """Each Attempt's page as `awp serve` renders it (its events, stored diff, commit message, record)."""
    links = DagsterLinks("http://127.0.0.1:3000")
    return {f"page {a}": attempt_html(attempt_view(found), links) for a in attempts
            if (found := find_attempt(ledger_of(instance), a)) is not None}


@pytest.mark.slow
@pytest.mark.parametrize("storage", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_no_canary_anywhere_in_storage_files_tags_or_git_after_a_run(
        storage: str, tmp_path: Path, make_git_repo: Callable[[Path], Path], canaries: None,
        request: pytest.FixtureRequest, reliability_row: Callable[..., None], home_folders: Path) -> None:
    started = time.monotonic()
    packet, overlay = _packet(tmp_path / "canary", make_git_repo)
    providers = side_door_catalog(tmp_path / "catalog")  # the canaries' catalog and a `command` agent
    home = packet / ".awp" / "dagster"
    db: sa.URL | None = None
    if storage == "postgres":
        db = request.getfixturevalue("fresh_pg_database")
        home = postgres_instance_dir(tmp_path / "pg-home", db)

    # A process of its own, verbose: Dagster's console log (the agent's live lines) goes to the compute logs.
    result = subprocess.run([AWP, "run", str(packet), "--providers", str(providers), "--simulate-overlay",
                             str(overlay), "--no-recovery", "--instance", str(home), "--json", "-v"],
                            capture_output=True, text=True, timeout=300)
    # What the canaries went through: a completed commit, a failed verifier and a provider error.
    assert result.returncode == 1, result.stdout + result.stderr
    outcomes = {o["prompt"]: o for o in json.loads(result.stdout)["prompts"]}
    assert {p: o["result"] for p, o in outcomes.items()} == {
        "01": "completed", "02": "verification_failed", "03": "provider_failed"}, result.stdout

    places: dict[str, str] = {"awp run stdout": result.stdout, "awp run stderr": result.stderr}
    # Then every other command on the packet and its instance (a repair Attempt among them), and every file
    # they and the run left under HOME, the XDG homes and the AWP config and cache homes (the parse cache).
    places.update(awp_outputs(*every_command(packet, providers, home, packet / "workspace" / "notes.md")))
    places.update(files(home_folders))
    assert [p for p in places if "/parse/" in p], "no parse cache written: the dump would prove nothing of it"
    places.update(files(packet / ".awp"))
    if storage == "postgres":
        places.update(files(home))
    compute_logs = [p for p in places if "/compute_logs/" in p and places[p]]
    assert compute_logs, "the run's compute logs hold nothing: the dump would prove nothing about them"
    if storage == "sqlite":
        places.update(sqlite_dumps(home))
    else:
        engine = sa.create_engine(db, poolclass=sa.pool.NullPool)  # type: ignore[arg-type]
        try:
            places.update(tables(engine, "postgres"))
        finally:
            engine.dispose()
    instance = open_instance(packet, home)
    try:
        places["run tags"] = "\n".join(f"{k}={v}" for run in instance.get_runs() for k, v in run.tags.items())
        places.update(_attempt_pages(instance, [o["attempt"] for o in outcomes.values()]))
    finally:
        instance.dispose()
    assert all(f"page {o['attempt']}" in places for o in outcomes.values())  # diffs: files under .awp/
    places["git objects"] = git_objects(packet / "workspace")
    assert "AWP-Prompt: 01" in places["git objects"]  # the dump reads what it means to

    leaked = count_canaries(places)
    total = sum(sum(counts.values()) for counts in leaked.values())
    print(f"{storage}: {len(places)} places dumped; leaks: {leaked}")
    reliability_row(f"secrets: canaries through awp run, full dump ({storage})", tries=len(places),
                    survived=len(places) - len(leaked), secrets_leaked=total,
                    seconds=time.monotonic() - started,
                    note="storage tables (snapshots decompressed), .awp/, run tags, compute logs, git objects, "
                         "every command's output, HOME, XDG and cache homes")
    assert not leaked, leaked


def test_awp_run_refuses_a_pattern_secret_in_a_prompt_body(tmp_path: Path, make_git_repo: Callable[[Path], Path],
                                                           canaries: None) -> None:
    packet, _ = _packet(tmp_path / "canary", make_git_repo)
    providers = tmp_path / "providers.yaml"
    providers.write_text(PROVIDERS)
    body = packet / "prompts" / "03_refused.prompt.md"
    body.write_text(body.read_text() + f"use {PATTERN_SECRET}\n")
    result = awp("run", packet, "--providers", providers, "--dry-run")
    assert result.exit_code == 2
    assert "refusing to run: a anthropic key is written on line" in result.output
    assert PATTERN_SECRET not in result.output
    assert not (packet / ".awp").exists()  # nothing ran, nothing was stored


def _daemon_packet(root: Path) -> Path:
    """The packet for the daemon, which has no simulate overlay: the agent's steps are in the prompts, so the
    agent says only the literal canaries (a pattern secret in a prompt is refused as the definitions load);
    the verifier still composes the pattern secret. No repair: one run, then the AgentRuns end."""
    (root / "prompts").mkdir(parents=True)
    (root / "packet.yaml").write_text(yaml.safe_dump({
        "name": "canary", "provider": "sim-keyed", "model": "sim-keyed-1", "accounts": ["in-use"],
        "repos": {"app": {"path": "./workspace", "default": True}}, "recovery": {"repair": {"enabled": False}}}))
    fronts = {
        "01_write": {"id": "01", "commit": f"feat: notes (in use {CANARY_IN_USE}, other {CANARY_OTHER})",
                     "verify": {"files_exist": ["notes.md"]},
                     "simulate": {"attempts": [{"messages": [f"agent output: {LITERALS_SAID}"],
                                                "writes": [{"path": "notes.md", "text": "notes\n"}]}]}},
        "02_check": {"id": "02", "verify": {"commands": [ECHO, ARGV_CHECK], "contains": [CONTAINS_CHECK]},
                     "simulate": {"attempts": [{"messages": [f"tool output: {LITERALS_SAID}"]}]}}}
    for name, front in fronts.items():
        (root / "prompts" / f"{name}.prompt.md").write_text(
            f"---\n{yaml.safe_dump(front)}---\nWork. The deploy credential is {CANARY_IN_USE}.\n")
    return root


@pytest.mark.slow
def test_no_canary_anywhere_after_a_run_launched_as_the_ui_launches_it_under_the_daemon(
        tmp_path: Path, make_git_repo: Callable[[Path], Path], canaries: None,
        reliability_row: Callable[..., None]) -> None:
    started = time.monotonic()
    project = make_project(tmp_path / "project", {"canary": _daemon_packet(tmp_path / "src" / "canary")},
                           providers=PROVIDERS)
    packet = project / "assets" / "canary"
    make_git_repo(packet / "workspace")
    home = packet / ".awp" / "dagster"  # the embedded instance, as the README's UI command serves it
    home.mkdir(parents=True)
    (home / "dagster.yaml").write_text(embedded_config(home))
    with deployment(home, project) as running:  # webserver + daemon; the canaries are in their environment
        run_id = running.launch_job("packet__canary")
        running.wait_until(lambda i: (run := i.get_run_by_id(run_id)) is not None and run.status in FINISHED,
                           300, "the canary packet's run")
        with running.instance() as instance:
            records = attempt_records(instance, run_id)
            places: dict[str, str] = {
                "run tags": "\n".join(f"{k}={v}" for run in instance.get_runs() for k, v in run.tags.items())}
    assert {r.identity.prompt: r.result for r in records} == {"01": "completed", "02": "verification_failed"}
    failed = {item.check_name for r in records if r.verifier for item in r.verifier.failures}
    assert failed == {"notes_md_contains_key_canary_other_account"}  # named, not keyed
    places.update(files(packet / ".awp"))  # instance files, compute logs, the daemon's and webserver's logs
    assert [p for p in places if "/compute_logs/" in p and places[p]], "no compute logs: the dump proves nothing"
    places.update(sqlite_dumps(home))
    places["git objects"] = git_objects(packet / "workspace")
    assert "AWP-Prompt: 01" in places["git objects"]

    leaked = count_canaries(places)
    total = sum(sum(counts.values()) for counts in leaked.values())
    print(f"daemon: {len(places)} places dumped; leaks: {leaked}")
    reliability_row("secrets: canaries through a UI launch under the daemon, full dump", tries=len(places),
                    survived=len(places) - len(leaked), secrets_leaked=total, seconds=time.monotonic() - started,
                    note="a credential in a verify argv and a contains text; storage, logs, run tags, git objects")
    assert not leaked, leaked


def test_the_code_location_refuses_a_key_in_a_verify_argv_without_echoing_it(tmp_path: Path,
                                                                           canaries: None) -> None:
    """What the webserver and the daemon load (`workspace.yaml`): the packet is refused with its file and line,
    as `awp run` refuses it, and the key is in no output."""
    source = _daemon_packet(tmp_path / "src" / "canary")
    check = source / "prompts" / "02_check.prompt.md"
    check.write_text(check.read_text().replace("--key", PATTERN_SECRET))
    project = make_project(tmp_path / "project", {"canary": source}, providers=PROVIDERS)
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "home"), "AWP_PROJECT_ROOT": str(project)}
    (tmp_path / "home").mkdir()
    result = subprocess.run([str(Path(sys.executable).parent / "dagster"), "definitions", "validate", "-w",
                             "workspace.yaml"], cwd=project, env=env, capture_output=True, text=True, timeout=300)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "02_check.prompt.md" in output and "refusing to run: a anthropic key is written on line" in output
    assert count_canaries({"dagster definitions validate": output}) == {}
