"""`kill -9` of `awp run` at points of an Attempt, found by watching its stored events, then a rerun of the
same packet run. Nothing is lost, nothing runs twice, no run stays STARTED, no slot stays held."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from dagster import DagsterRunStatus

from awp_pipelines.orchestration.history import packet_run_history, prompt_states
from awp_pipelines.orchestration.instance import open_instance
from awp_pipelines.orchestration.naming import prompt_key
from awp_pipelines.packet import load_packet

AWP = str(Path(sys.executable).parent / "awp")
UNFINISHED = {DagsterRunStatus.QUEUED, DagsterRunStatus.NOT_STARTED, DagsterRunStatus.STARTING,
              DagsterRunStatus.STARTED, DagsterRunStatus.CANCELING}


def _packet(root: Path, make_git_repo: Callable[[Path], Path]) -> Path:
    """01 writes a.txt slowly (1.5 s of agent time), then 02 writes b.txt; both on one work tree."""
    make_git_repo(root / "workspace")
    (root / "packet.yaml").write_text(yaml.safe_dump({"name": "crash", "provider": "simulated",
                                                      "repos": {"app": {"path": "./workspace", "default": True}}}))
    (root / "prompts").mkdir()
    slow = {"messages": ["writing a.txt"], "delay_ms": 1500, "writes": [{"path": "a.txt", "text": "a\n"}]}
    fronts = {"01_first": {"verify": {"files_exist": ["a.txt"]}, "simulate": {"attempts": [slow, slow, slow]}},
              "02_second": {"verify": {"files_exist": ["b.txt"]},
                            "simulate": {"attempts": [{"writes": [{"path": "b.txt", "text": "b\n"}]}] * 3}}}
    for name, front in fronts.items():
        (root / "prompts" / f"{name}.prompt.md").write_text(f"---\n{yaml.safe_dump(front)}---\nWork.\n")
    return root


def _events(packet: Path) -> list[dict]:
    found = []
    for file in sorted((packet / ".awp" / "events").rglob("*.jsonl")):
        found += [json.loads(line) for line in file.read_text().splitlines() if line.strip().endswith("}")]
    return found


def _kill_when(packet: Path, seen: Callable[[list[dict]], bool], env: dict[str, str]) -> str:
    """Start `awp run`, kill -9 its process group once `seen(events)`; return the packet run's id."""
    proc = subprocess.Popen([AWP, "run", str(packet), "--json"], env={**os.environ, **env}, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            if seen(_events(packet)):
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)
                break
            assert proc.poll() is None, "awp run ended before the kill point"
            time.sleep(0.05)
        else:
            raise AssertionError("the kill point was never reached")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    [packet_run] = [p.name for p in (packet / ".awp" / "events").iterdir()]
    return packet_run


def _commits_per_prompt(repo: Path) -> dict[str, int]:
    out = subprocess.run(["git", "-C", str(repo), "log", "--format=%(trailers:key=AWP-Prompt,valueonly)%x00"],
                         capture_output=True, text=True, check=True).stdout
    counts: dict[str, int] = {}
    for value in (v.strip() for v in out.split("\0")):
        if value:
            counts[value] = counts.get(value, 0) + 1
    return counts


def _type(kind: str, attempt: str) -> Callable[[list[dict]], bool]:
    return lambda events: any(e["type"] == kind and e["attempt"].endswith(attempt) for e in events)


POINTS = {
    # name: (kill when, fault pause, partial work left behind)
    "agent mid-session": (_type("message_received", ".01.a1"), "", False),
    "agent done, before verify": (_type("file_written", ".01.a1"), "after_agent:8", True),
    "committed, before the record": (_type("commit_created", ".01.a1"), "after_commit:8", False),
}


@pytest.mark.slow
@pytest.mark.parametrize("point", list(POINTS))
def test_kill_9_then_rerun_loses_nothing_and_doubles_nothing(point: str, tmp_path: Path, make_git_repo,
                                                             reliability_row) -> None:
    started = time.monotonic()
    packet = _packet(tmp_path / "crash", make_git_repo)
    seen, pause, partial = POINTS[point]
    packet_run = _kill_when(packet, seen, {"AWP_FAULT_PAUSE": pause} if pause else {})
    repo = packet / "workspace"
    dirty_after_kill = bool(subprocess.run(["git", "-C", str(repo), "status", "--porcelain"], capture_output=True,
                                           text=True).stdout)
    assert dirty_after_kill == partial
    if point == "agent mid-session":  # what a watcher sees before anyone reruns it
        watched = subprocess.run([AWP, "watch", str(packet), "--once", "--json"], capture_output=True, text=True,
                                 timeout=120)
        assert watched.returncode == 1 and json.loads(watched.stdout)["violations"] == ["not_running"]

    rerun = subprocess.run([AWP, "run", str(packet), "--packet-run", packet_run, "--json"], capture_output=True,
                           text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    outcomes = {o["prompt"]: o for o in json.loads(rerun.stdout)["prompts"]}
    assert {p: o["result"] for p, o in outcomes.items()} == {"01": "completed", "02": "completed"}

    commits = _commits_per_prompt(repo)
    assert commits == {"01": 1, "02": 1}  # nothing committed twice
    assert subprocess.run(["git", "-C", str(repo), "status", "--porcelain"], capture_output=True,
                          text=True).stdout == ""
    loaded = load_packet(packet)
    instance = open_instance(packet)
    try:
        runs = instance.get_runs()
        assert not [r.run_id for r in runs if r.status in UNFINISHED]  # the killed run was ended
        storage = instance.event_log_storage
        held = {key: storage.get_concurrency_info(key).claimed_slots for key in storage.get_concurrency_keys()}
        assert all(not claimed for claimed in held.values()), held
        from awp_pipelines.catalog import load_catalog
        from awp_pipelines.orchestration.assets import packet_assets

        binding = packet_assets(loaded, load_catalog(None)).binding
        history = packet_run_history(instance, packet_run, binding.keys)
        first = prompt_states(binding, history, ["01"])[0]
        # Every started Attempt is accounted for: recorded, or a fact (interrupted / adopted) that counts.
        assert len(first.facts) == first.started
        assert first.started == (1 if point.startswith("committed") else 2)  # the adopted commit ran once
        assert prompt_key(loaded, "01") in binding.keys
    finally:
        instance.dispose()
    refs = subprocess.run(["git", "-C", str(repo), "for-each-ref", "refs/awp/checkpoints/"], capture_output=True,
                          text=True).stdout
    assert bool(refs) == partial  # the dead Attempt's partial work was saved before the tree was cleaned
    reliability_row(f"kill -9: {point}, then rerun", tries=1, survived=1, records_lost=0,
                    commits_doubled=sum(n - 1 for n in commits.values()), budget_overruns=0,
                    seconds=time.monotonic() - started, note="no run left STARTED, no slot held")
