"""Watch liveness on real processes and real repos: run lock (pid + start time), progress record, repo activity."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from awp_pipelines.watch import (
    Liveness,
    LockHeld,
    Progress,
    RunLock,
    acquire,
    liveness,
    process_start_time,
    progress,
    quiet_minutes,
    read_lock,
    release,
    repo_activity,
    violations,
    watch_once,
)

MakeRepo = Callable[[Path], Path]


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(["sleep", "60"])
    yield proc
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def runner_holding_lock(lock: Path) -> subprocess.Popen[str]:
    """A separate process that takes the run lock the way a runner does, then works (sleeps)."""
    script = textwrap.dedent(f"""
        import sys, time
        from awp_pipelines.watch import acquire
        acquire({str(lock)!r})
        print("locked", flush=True)
        time.sleep(60)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    return proc


def test_start_time_is_read_from_proc_and_none_for_a_gone_or_zombie_process(sleeper) -> None:
    assert process_start_time(os.getpid()) == RunLock.for_process().start_time
    assert process_start_time(sleeper.pid) is not None
    sleeper.kill()
    time.sleep(0.2)  # exited but not reaped: a zombie is not alive
    assert process_start_time(sleeper.pid) is None
    sleeper.wait()
    assert process_start_time(sleeper.pid) is None


def test_a_lock_of_a_live_process_is_running_and_stale_once_it_is_killed(tmp_path: Path) -> None:
    lock = tmp_path / "run.lock"
    assert liveness(lock).state == "absent"
    runner = runner_holding_lock(lock)
    try:
        state = liveness(lock)
        assert state.running and state.lock == RunLock(runner.pid, process_start_time(runner.pid) or -1)
        assert violations(state, Progress("missing")) == []
    finally:
        runner.send_signal(signal.SIGKILL)
        runner.wait()
    stale = liveness(lock)
    assert stale.state == "stale" and "gone" in stale.reason
    assert violations(stale, Progress("missing")) == ["not_running"]


def test_a_reused_pid_with_another_start_time_is_stale(tmp_path: Path, sleeper) -> None:
    lock = tmp_path / "run.lock"
    real = RunLock.for_process(sleeper.pid)
    lock.write_text(RunLock(sleeper.pid, real.start_time + 1).render())
    state = liveness(lock)
    assert state.state == "stale" and "start time differs" in state.reason
    lock.write_text("not a lock")
    assert liveness(lock).state == "stale"


def test_a_live_lock_is_refused_and_a_stale_one_is_reclaimed(tmp_path: Path) -> None:
    lock = tmp_path / "state" / "run.lock"
    runner = runner_holding_lock(lock)
    try:
        with pytest.raises(LockHeld) as held:
            acquire(lock)
        assert held.value.owner.pid == runner.pid
    finally:
        runner.kill()
        runner.wait()
    mine = acquire(lock)  # the runner died: its lock is stale and reclaimed
    assert mine == RunLock.for_process() and read_lock(lock) == mine
    assert liveness(lock).running


def test_release_removes_only_our_own_lock(tmp_path: Path, sleeper) -> None:
    lock = tmp_path / "run.lock"
    mine = acquire(lock)
    other = RunLock.for_process(sleeper.pid)
    assert not release(lock, other) and lock.exists()
    assert release(lock, mine) and not lock.exists()


def test_progress_is_stale_after_the_timeout_and_unreadable_fails_closed(tmp_path: Path) -> None:
    record = tmp_path / "progress.json"
    now = 1_800_000_000.0
    assert progress(record, 60, now) == Progress("missing") and not Progress("missing").violation
    record.write_text(json.dumps({"token": "t", "cursor": "3/7", "unit": "files", "summary": "halfway",
                                  "updated_at": _iso(now - 30)}))
    assert progress(record, 60, now) == Progress("fresh", age_s=30.0, summary="halfway", cursor="3/7", unit="files")
    record.write_text(json.dumps({"summary": "halfway", "updated_at": _iso(now - 3601)}))
    late = progress(record, 3600, now)
    assert late.state == "stale" and late.violation
    live = Liveness("running", "alive")
    assert violations(live, late) == ["progress_stale"]
    assert violations(live, late, finished=True) == []
    record.write_text("{torn")
    assert progress(record, 3600, now).state == "invalid" and progress(record, 3600, now).violation


def test_progress_without_updated_at_ages_from_the_files_mtime(tmp_path: Path) -> None:
    record = tmp_path / "progress.json"
    record.write_text(json.dumps({"summary": "no stamp"}))
    os.utime(record, (1_000.0, 1_000.0))
    assert progress(record, 60, now=1_100.0).state == "stale"
    assert progress(record, 600, now=1_100.0).state == "fresh"


def test_repo_activity_lists_dirty_files_and_commits_since_a_sha(make_git_repo: MakeRepo, tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "docs")
    base = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert repo_activity(repo, base).new_commits == [] and repo_activity(repo, base).dirty == []
    for name in ("one", "two"):
        (repo / f"{name}.md").write_text(name)
        subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
        subprocess.run(["git", "-C", str(repo), "commit", "-qm", f"add {name}"], check=True)
    (repo / "wip.md").write_text("draft")
    (repo / "README.md").write_text("changed")
    activity = repo_activity(repo, base)
    assert [subject for _, subject in activity.new_commits] == ["add two", "add one"]
    assert activity.dirty == ["README.md", "wip.md"]
    assert activity.head and activity.head != base
    assert activity.last_change is not None and abs(activity.last_change - time.time()) < 120
    assert repo_activity(repo, "0" * 40).new_commits == []  # an unknown sha claims nothing


def test_quiet_minutes_counts_from_the_newest_activity() -> None:
    assert quiet_minutes([None, 1_000.0, 1_600.0], now=1_900.0) == 5.0
    assert quiet_minutes([None], now=1.0) is None


def _iso(epoch: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(epoch, UTC).isoformat().replace("+00:00", "Z")


def test_one_look_reports_not_running_after_the_runner_is_killed_and_stale_progress(
        make_git_repo: MakeRepo, tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "docs")
    base = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    lock, record = tmp_path / "run.lock", tmp_path / "progress.json"
    record.write_text(json.dumps({"summary": "drafting", "updated_at": _iso(time.time())}))
    runner = runner_holding_lock(lock)
    try:
        (repo / "draft.md").write_text("wip")
        report = watch_once(lock, record, {"docs": (repo, base)}, progress_timeout_s=600)
        assert report.violations == [] and report.liveness.running
        assert report.line().startswith("runner=UP quiet=0min dirty=1 commits=0 progress=fresh")
    finally:
        runner.kill()
        runner.wait()
    later = time.time() + 700  # the record is now older than the timeout
    report = watch_once(lock, record, {"docs": (repo, base)}, progress_timeout_s=600, now=later)
    assert report.violations == ["not_running", "progress_stale"]
    data = json.loads(json.dumps(report.as_dict()))  # --json lines: plain values only
    assert data["running"] is False and data["violations"] == ["not_running", "progress_stale"]
    assert data["repos"][0]["repo"] == "docs" and data["repos"][0]["dirty"] == ["draft.md"]
    assert data["quiet_minutes"] >= 11
    assert watch_once(lock, None, {}, finished=True).violations == []
