"""PostgreSQL loses its last commits under a real `awp run` of the demo (issue 32: the server runs with
`synchronous_commit=off`, and a kill -9 of it forgets what it had acknowledged). Made deterministic: the test's
own server is backed up at a known point (01 committed and recorded, 02's step waiting before its Attempt),
the run goes on to commit 02 and 03, then the server is crashed and its data put back from the backup. The
ledger has lost 02 and 03 whole (their start markers, records and claims) while git holds their commits.

With no repair but AWP's own: `awp status` shows each committed prompt completed (adopted from its commit's
`AWP-Attempt` trailer), never planned, queued or running; `awp run --packet-run` (README: how a user continues a
packet run) runs no agent again, makes no second commit, stores the adopted Attempts and says so, one line each.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import sqlalchemy as sa
from reliability.crash import AWP, commits_per_prompt, pg_sh, shipped_instance

from awp_pipelines.core.packet.packet import load_packet
from awp_pipelines.core.packet.providers_config import load_catalog
from awp_pipelines.orchestration.assets import packet_assets
from awp_pipelines.orchestration.ledger.adoption import LOST_REASON
from awp_pipelines.orchestration.ledger.factory import ledger_of
from awp_pipelines.orchestration.ledger.history import PacketRunHistory
from awp_pipelines.orchestration.ledger.instance import open_instance

# 02's step waits this long before its Attempt: the backup is taken in that window (it takes under a second).
PAUSE_S = 10
# Bounds against a hang or a spin (not speed assertions): the demo takes seconds.
RUN_S = 240.0


def _history(packet: Path, home: Path, packet_run: str | None = None) -> PacketRunHistory | None:
    """The packet run's history as the ledger stores it (the newest packet run by default), or None."""
    binding = packet_assets(load_packet(packet), load_catalog(None)).binding
    instance = open_instance(packet, home)
    try:
        ledger = ledger_of(instance)
        packet_run = packet_run or next(iter(ledger.packet_runs(binding.packet.name)), None)
        return ledger.history(packet_run, binding.keys) if packet_run else None
    finally:
        instance.dispose()


def _recorded(history: PacketRunHistory | None, prompt: str) -> bool:
    return history is not None and bool(history.agent_runs.get(prompt) and history.agent_runs[prompt].records)


def _agent_lines(packet: Path) -> int:
    """Lines the Attempts' agents and AWP wrote to the JSONL event logs: an Attempt that runs adds some."""
    return sum(len(f.read_text().splitlines()) for f in (packet / ".awp" / "events").rglob("*.jsonl"))


def _attempt_trailers(repo: Path) -> list[str]:
    return subprocess.run(["git", "-C", str(repo), "log", "--format=%(trailers:key=AWP-Attempt,valueonly)"],
                          capture_output=True, text=True, check=True).stdout.split()


@pytest.mark.slow
@pytest.mark.postgres
def test_a_database_that_lost_its_last_commits_is_repaired_from_git_and_no_committed_prompt_runs_twice(
        demo_copy: Path, private_pg: tuple[Path, sa.URL], monkeypatch: pytest.MonkeyPatch,
        reliability_row: Callable[..., None]) -> None:
    started = time.monotonic()
    folder, db = private_pg
    home = demo_copy.parent / "dagster-home"
    for name, value in shipped_instance(home, db).items():
        monkeypatch.setenv(name, value)  # this process reads the same instance as the runs
    repo = demo_copy / "workspace"
    first = subprocess.Popen([AWP, "run", str(demo_copy), "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, start_new_session=True, stdin=subprocess.DEVNULL,
                             env={**os.environ, "AWP_FAULT_PAUSE": f"before_attempt@02:{PAUSE_S}"})
    try:
        deadline = time.monotonic() + RUN_S
        while not _recorded(_history(demo_copy, home), "01"):
            assert first.poll() is None, first.communicate()[1][-3000:]
            assert time.monotonic() < deadline, "01's record was never stored"
            time.sleep(0.2)
        pg_sh("backup", folder)  # the known point: 01 recorded, 02's step holds the work tree, before its Attempt
        out, err = first.communicate(timeout=RUN_S)
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
            first.wait()
    assert first.returncode == 0, err[-3000:]
    packet_run = json.loads(out)["packet_run"]
    committed = _attempt_trailers(repo)
    assert commits_per_prompt(repo) == {"01": 1, "02": 1, "03": 1}

    pg_sh("restore", folder)  # a crash, and every commit after the backup lost
    lost = _history(demo_copy, home, packet_run)
    assert lost is not None and _recorded(lost, "01")
    assert not {"02", "03"} & set(lost.agent_runs), "the database still knew 02 or 03: the loss came elsewhere"

    # The views: each committed prompt is completed, its Attempt adopted from the commit; nothing is stored.
    status = subprocess.run([AWP, "status", str(demo_copy), "--packet-run", packet_run, "--json"],
                            capture_output=True, text=True, timeout=RUN_S)
    assert status.returncode == 0, status.stderr
    report = json.loads(status.stdout)
    print(f"status after the loss: {[(p['prompt'], p['state']) for p in report['prompts']]}")
    assert (report["state"], [p["state"] for p in report["prompts"]]) == ("completed", ["completed"] * 3)
    assert [a["attempt"] for p in report["prompts"] for a in p["attempts"] if a["adopted"]] == committed[:2][::-1]
    said = subprocess.run([AWP, "status", str(demo_copy), "--packet-run", packet_run], capture_output=True,
                          text=True, timeout=RUN_S).stdout
    assert "queued" not in said and "running" not in said and "planned" not in said, said
    assert not {"02", "03"} & set(_history(demo_copy, home, packet_run).agent_runs)  # type: ignore[union-attr]

    # The rerun a user makes: it finishes (a spin would hit the timeout), runs no agent and commits nothing.
    lines = _agent_lines(demo_copy)
    rerun = subprocess.run([AWP, "run", str(demo_copy), "--packet-run", packet_run, "--json"], capture_output=True,
                           text=True, timeout=RUN_S)
    print(f"rerun: exit {rerun.returncode}\n{rerun.stdout[-3000:]}\n{rerun.stderr[-3000:]}")
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    outcomes = {o["prompt"]: (o["result"], o["attempt"], o["message"]) for o in json.loads(rerun.stdout)["prompts"]}
    assert outcomes == {"01": ("completed", committed[2], ""), "02": ("completed", committed[1], LOST_REASON),
                        "03": ("completed", committed[0], LOST_REASON)}
    assert "Attempt " not in rerun.stderr, rerun.stderr  # no Attempt started
    assert _agent_lines(demo_copy) == lines
    assert _attempt_trailers(repo) == committed

    # The repair is stored: the ledger itself now holds each committed Attempt, once.
    repaired = _history(demo_copy, home, packet_run)
    assert repaired is not None
    records = {p: [(r.identity.attempt_id, r.result, r.adopted) for r in h.records]
               for p, h in repaired.agent_runs.items()}
    assert records == {"01": [(committed[2], "completed", False)], "02": [(committed[1], "completed", True)],
                       "03": [(committed[0], "completed", True)]}
    reliability_row("postgres lost its last commits (backup restored after a crash), then rerun", tries=1,
                    survived=1, records_lost=0, commits_doubled=0, seconds=time.monotonic() - started,
                    note="2 Attempts adopted from their AWP-Attempt trailers; no agent ran again")
