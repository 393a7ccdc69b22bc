"""Two `awp run` started at once on one packet, on a fresh instance folder (the case that used to leave
two alembic heads): one runs the packet, the other refuses at once naming the holder's pid; the instance is
intact and every prompt is committed exactly once."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from reliability.crash import AWP, commits_per_prompt, write_packet
from reliability.test_instance_init import alembic_versions

from awp_pipelines.orchestration.ledger.instance import open_instance

# Three races in `make test`; more with AWP_TWO_RUNNER_TRIALS (the lock's own race of eight processes is
# tests/reliability/test_run_lock.py, the fresh instance's is test_instance_init.py).
TRIALS = int(os.environ.get("AWP_TWO_RUNNER_TRIALS", "3"))


def _trial(root: Path, make_git_repo: Callable[[Path], Path]) -> tuple[bool, str]:
    packet = write_packet(root, make_git_repo)
    both = [subprocess.Popen([AWP, "run", str(packet), "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             stdin=subprocess.DEVNULL, text=True) for _ in range(2)]
    ended = {p.pid: (p.wait(timeout=300), *p.communicate()) for p in both}
    winners = [pid for pid, (code, _, _) in ended.items() if code == 0]
    refused = [err for code, _, err in ended.values() if code == 2]
    if len(winners) != 1 or len(refused) != 1:
        return False, f"exits {[(c, e[-500:]) for c, _, e in ended.values()]}"
    if f"already being run by pid {winners[0]}" not in refused[0] or "Traceback" in refused[0]:
        return False, f"refusal does not name {winners[0]}: {refused[0][-500:]}"
    versions = alembic_versions(packet / ".awp" / "dagster")
    if not all(len(rows) == 1 for rows in versions.values()) or len({v for r in versions.values() for v in r}) != 1:
        return False, f"instance broken: {versions}"
    if commits_per_prompt(packet / "workspace") != {"01": 1, "02": 1}:
        return False, f"commits {commits_per_prompt(packet / 'workspace')}"
    instance = open_instance(packet)
    try:
        if not instance.get_runs() or any(not r.is_success for r in instance.get_runs()):
            return False, "a run did not succeed"
    finally:
        instance.dispose()
    return True, ""


@pytest.mark.slow
def test_two_awp_runs_on_one_packet_one_refuses_naming_the_holder_and_the_instance_is_intact(
        tmp_path: Path, make_git_repo: Callable[[Path], Path], reliability_row: Callable[..., None]) -> None:
    started = time.monotonic()
    results = [_trial(tmp_path / f"t{n}", make_git_repo) for n in range(TRIALS)]
    survived = sum(ok for ok, _ in results)
    reliability_row("two awp run on one packet at once, fresh instance", tries=TRIALS, survived=survived,
                    commits_doubled=0 if survived == TRIALS else None, seconds=time.monotonic() - started,
                    note="one runs, one refuses naming its pid; one alembic head; one commit per prompt")
    assert survived == TRIALS, [why for ok, why in results if not ok]
