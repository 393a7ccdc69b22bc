"""What the crash tests share: a packet on a real git work tree, `awp run` in a process group of its own, and
what a test watches (the JSONL events, the Dagster instance) and checks afterwards (commits per prompt,
checkpoint refs, no run left unfinished, no slot held)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlalchemy as sa
import yaml
from dagster import DagsterInstance, DagsterRunStatus, RunsFilter

from awp_pipelines.core.decisions.agent_run import DecisionInput
from awp_pipelines.core.packet.packet import load_packet
from awp_pipelines.core.packet.providers_config import load_catalog
from awp_pipelines.orchestration.assets import packet_assets
from awp_pipelines.orchestration.compile.naming import prompt_key
from awp_pipelines.orchestration.ledger.factory import ledger_of
from awp_pipelines.orchestration.ledger.history import UNFINISHED, decision_inputs
from awp_pipelines.orchestration.ledger.instance import open_instance

AWP = str(Path(sys.executable).parent / "awp")
REPO_ROOT = Path(__file__).resolve().parents[2]
PG_SH = REPO_ROOT / "tests" / "pg.sh"

A_TXT = {"path": "a.txt", "text": "a\n"}
SLOW = {"messages": ["writing a.txt"], "delay_ms": 1500, "writes": [A_TXT]}


def write_packet(root: Path, make_git_repo: Callable[[Path], Path], first: dict[str, Any] | None = None,
                 recovery: dict[str, Any] | None = None, repos: tuple[str, ...] = ()) -> Path:
    """01 writes a.txt slowly (1.5 s of agent time), then 02 writes b.txt; both on one work tree. `first`
    overrides 01's front matter; `repos` are more git repos beside the work tree (not a prompt's target)."""
    make_git_repo(root / "workspace")
    manifest: dict[str, Any] = {"name": "crash", "provider": "simulated",
                                "repos": {"app": {"path": "./workspace", "default": True}}}
    for name in repos:
        make_git_repo(root / name)
        manifest["repos"][name] = {"path": f"./{name}"}
    if recovery:
        manifest["recovery"] = recovery
    (root / "packet.yaml").write_text(yaml.safe_dump(manifest))
    (root / "prompts").mkdir()
    fronts = {"01_first": {"verify": {"files_exist": ["a.txt"]}, "simulate": {"attempts": [SLOW] * 3},
                           **(first or {})},
              "02_second": {"verify": {"files_exist": ["b.txt"]},
                            "simulate": {"attempts": [{"writes": [{"path": "b.txt", "text": "b\n"}]}] * 3}}}
    for name, front in fronts.items():
        (root / "prompts" / f"{name}.prompt.md").write_text(f"---\n{yaml.safe_dump(front)}---\nWork.\n")
    return root


def events(packet: Path) -> list[dict]:
    found = []
    for file in sorted((packet / ".awp" / "events").rglob("*.jsonl")):
        found += [json.loads(line) for line in file.read_text().splitlines() if line.strip().endswith("}")]
    return found


class Watch:
    """What the killer looks at: the JSONL events, and (opened on first use) the packet's Dagster instance."""

    def __init__(self, packet: Path) -> None:
        self.packet = packet
        self._instance: DagsterInstance | None = None

    def events(self) -> list[dict]:
        return events(self.packet)

    @property
    def instance(self) -> DagsterInstance:
        if self._instance is None:
            self._instance = open_instance(self.packet)
        return self._instance

    def close(self) -> None:
        if self._instance is not None:
            self._instance.dispose()


Seen = Callable[[Watch], bool]


def spawn(packet: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """`awp run PACKET ARGS --json` in a process group of its own (so a test signals or kills all of it)."""
    return subprocess.Popen([AWP, "run", str(packet), *args, "--json"], env={**os.environ, **(env or {})},
                            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL)


@contextmanager
def watched(packet: Path, proc: subprocess.Popen[bytes]) -> Iterator[Watch]:
    """A Watch on the packet while `awp run` (`proc`) runs; on leaving, the watch is closed and a run still
    alive is killed with its process group, whatever failed."""
    watch = Watch(packet)
    try:
        yield watch
    finally:
        watch.close()
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)


def wait_for(proc: subprocess.Popen[bytes], seen: Callable[[], bool], timeout_s: float = 120) -> bool:
    """Poll `seen` until it holds (True) or the process ends first (False)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if seen():
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.05)
    raise AssertionError("neither the point nor the end of awp run came")


def kill_when(packet: Path, seen: Seen, env: dict[str, str], *args: str) -> str:
    """Start `awp run`, kill -9 its process group once `seen`; return the packet run's id."""
    proc = spawn(packet, *args, env=env)
    with watched(packet, proc) as watch:
        reached = wait_for(proc, lambda: seen(watch))
        assert reached, "awp run ended before the kill point: " + (proc.stderr.read().decode() if proc.stderr
                                                                   else "")
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    [packet_run] = [p.name for p in (packet / ".awp" / "events").iterdir()]
    return packet_run


def commits_per_prompt(repo: Path) -> dict[str, int]:
    out = subprocess.run(["git", "-C", str(repo), "log", "--format=%(trailers:key=AWP-Prompt,valueonly)%x00"],
                         capture_output=True, text=True, check=True).stdout
    counts: dict[str, int] = {}
    for value in (v.strip() for v in out.split("\0")):
        if value:
            counts[value] = counts.get(value, 0) + 1
    return counts


def dirty(repo: Path) -> bool:
    return bool(subprocess.run(["git", "-C", str(repo), "status", "--porcelain"], capture_output=True,
                               text=True, check=True).stdout)


def checkpoint_refs(repo: Path) -> list[str]:
    return subprocess.run(["git", "-C", str(repo), "for-each-ref", "--format=%(refname)", "refs/awp/checkpoints/"],
                          capture_output=True, text=True, check=True).stdout.split()


def ended_cleanly(instance: DagsterInstance) -> None:
    """No run left unfinished, no concurrency slot held."""
    assert not [r.run_id for r in instance.get_runs() if r.status in UNFINISHED]
    storage = instance.event_log_storage
    held = {key: storage.get_concurrency_info(key).claimed_slots for key in storage.get_concurrency_keys()}
    assert all(not claimed for claimed in held.values()), held


def event(kind: str, attempt: str, **match: object) -> Seen:
    return lambda w: any(e["type"] == kind and e["attempt"].endswith(attempt)
                         and all(e.get(k) == v for k, v in match.items()) for e in w.events())


def recorded(prompt: str) -> Seen:
    """The prompt's first Attempt has its record stored (its run's materialization)."""
    def seen(w: Watch) -> bool:
        if not event("commit_created", f".{prompt}.a1")(w):
            return False
        key = prompt_key(load_packet(w.packet), prompt)
        return w.instance.get_latest_materialization_event(key) is not None
    return seen


def run_failed(w: Watch) -> bool:
    """A run of the packet ended failed: its Attempt's record is stored, the runner decides what next."""
    return bool(w.instance.get_runs(RunsFilter(statuses=[DagsterRunStatus.FAILURE])))


def settled(packet: Path, packet_run: str, prompt: str) -> DecisionInput:
    """After the last `awp run`: no run unfinished, no slot held; the prompt's state from stored history."""
    loaded = load_packet(packet)
    instance = open_instance(packet)
    try:
        ended_cleanly(instance)
        binding = packet_assets(loaded, load_catalog(None)).binding
        return decision_inputs(binding, ledger_of(instance).history(packet_run, binding.keys), [prompt])[0]
    finally:
        instance.dispose()


AGENT = """#!/bin/sh
echo $$ >> {ledger}/pids.txt
if [ "$(wc -l < {ledger}/pids.txt)" -gt 1 ]; then echo a > a.txt; echo "wrote a.txt"; exit 0; fi
echo half > half.txt
echo "wrote half.txt"
sleep 60
"""


def agent_packet(root: Path, make_git_repo) -> tuple[Path, Path, Path]:
    """01 runs the shell agent (first execution: half the work, then holds; later ones: the work); 02 is a
    quick simulated prompt. Returns (packet, providers.yaml, ledger)."""
    ledger = root / "ledger"
    ledger.mkdir(parents=True)
    script = root / "agent.sh"
    script.write_text(AGENT.format(ledger=ledger))
    providers = root / "providers.yaml"
    # Beside the runner (`isolation: none`): the ledger outside the tree holds the agent's host pids, which the
    # tests signal and look for; a sandboxed agent sees neither (its own pid namespace, no such folder).
    providers.write_text(yaml.safe_dump({"providers": {"agent": {"kind": "command", "command": f"sh {script}",
                                                                 "isolation": "none"}}}))
    packet = write_packet(root / "p", make_git_repo, {"provider": "agent", "simulate": None})
    return packet, providers, ledger


def agent_pids(ledger: Path) -> list[int]:
    return [int(line) for line in (ledger / "pids.txt").read_text().split()]


def rerun_completes(packet: Path, providers: Path, packet_run: str) -> dict[str, int]:
    rerun = subprocess.run([AWP, "run", str(packet), "--packet-run", packet_run, "--providers", str(providers),
                            "--json"], capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert {o["prompt"]: o["result"] for o in json.loads(rerun.stdout)["prompts"]} == {"01": "completed",
                                                                                        "02": "completed"}
    repo = packet / "workspace"
    assert not dirty(repo)
    return commits_per_prompt(repo)


def pg_sh(action: str, folder: Path) -> None:
    """tests/pg.sh `action` (pause, resume, backup, restore) on the test's own server in `folder`."""
    subprocess.run(["bash", str(PG_SH), action, str(folder)], check=True, capture_output=True, timeout=120)


def shipped_instance(home: Path, db: sa.URL) -> dict[str, str]:
    """The repo's own dagster.yaml (queued coordinator, pools of one, run monitoring) in `home`, and the
    environment it reads the server from."""
    home.mkdir(parents=True)
    shutil.copy(REPO_ROOT / "dagster.yaml", home / "dagster.yaml")
    return {"AWP_PG_USER": db.username or "", "AWP_PG_PASSWORD": db.password or "", "AWP_PG_HOST": db.host or "",
            "AWP_PG_DB": db.database or "", "AWP_PG_PORT": str(db.port), "AWP_DAGSTER_HOME": str(home)}
