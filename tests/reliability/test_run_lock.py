"""One runner per packet run, with real processes: a live holder is refused by name, a `kill -9`ed one is
reclaimed, a reused pid is not mistaken for the holder, and of 8 processes racing for a lock exactly one wins."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from awp_pipelines.core.engine.runlock import LockInfo, RunLock, RunLockHeld, process_start_time, run_lock

HOLDER = textwrap.dedent("""\
    import sys, time
    from awp_pipelines.core.engine.runlock import RunLock
    lock = RunLock(sys.argv[1], what="packet run pr-child").acquire()
    print("held", flush=True)
    time.sleep(120)
    """)


def start_holder(path: Path) -> subprocess.Popen[str]:
    child = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdout.readline().strip() == "held"
    return child


def test_a_live_holder_is_refused_by_pid_and_since_when(tmp_path: Path) -> None:
    path = tmp_path / "locks" / "pr-child.lock"
    child = start_holder(path)
    try:
        with pytest.raises(RunLockHeld) as caught:
            RunLock(path).acquire()
        assert caught.value.holder is not None and caught.value.holder.pid == child.pid
        message = str(caught.value)
        assert message.startswith(f"packet run pr-child is already being run by pid {child.pid} since 20")
        assert str(path) in message
    finally:
        child.kill()
        child.wait()


def test_a_killed_holder_is_reclaimed_by_the_next_acquire(tmp_path: Path) -> None:
    path = tmp_path / "pr-1.lock"
    child = start_holder(path)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    lock = RunLock(path).acquire()
    try:
        assert lock.reclaimed is not None and lock.reclaimed.pid == child.pid
        assert LockInfo.model_validate_json(path.read_text()).pid == os.getpid()
    finally:
        lock.release()
    assert not path.exists()


def test_a_reused_pid_with_another_start_time_is_stale(tmp_path: Path) -> None:
    path = tmp_path / "pr-2.lock"
    own_start = process_start_time(os.getpid())
    assert own_start is not None
    # Our own pid, but "started" at another time: the process that took this lock is gone.
    path.write_text(LockInfo(pid=os.getpid(), start_time=own_start - 1, host=socket.gethostname(),
                             since="2026-01-01T00:00:00+00:00").model_dump_json())
    with RunLock(path) as lock:
        assert lock.reclaimed is not None and lock.reclaimed.start_time == own_start - 1


def test_a_lock_from_another_host_without_a_beat_is_never_taken_over(tmp_path: Path) -> None:
    path = tmp_path / "pr-3.lock"
    path.write_text(LockInfo(pid=1, start_time=1, host="elsewhere.invalid", since="2026-11-30T00:00:00+00:00",
                             what="packet run pr-3").model_dump_json())
    with pytest.raises(RunLockHeld, match="pid 1 on host elsewhere.invalid since 2026-11-30"):
        RunLock(path).acquire()


def test_a_lock_from_another_host_is_judged_by_its_beat_not_by_its_pid(tmp_path: Path) -> None:
    """A lock on a shared filesystem: its holder's pid means nothing here, the file's freshness does. A live
    pid on this machine (our own) does not keep a silent remote holder's lock."""
    path = tmp_path / "pr-4.lock"
    remote = LockInfo(pid=os.getpid(), start_time=None, host="elsewhere.invalid", since="2026-11-30T00:00:00+00:00",
                      what="packet run pr-4", beat_s=1.0)
    path.write_text(remote.model_dump_json())
    with pytest.raises(RunLockHeld, match="on host elsewhere.invalid"):
        RunLock(path).acquire()  # touched just now: alive
    silent = time.time() - 15  # the bound of a 1 s beat: 4 x 1 + 10 s
    os.utime(path, (silent, silent))
    lock = RunLock(path).acquire()
    try:
        assert lock.reclaimed == remote
    finally:
        lock.release()


def test_a_holder_touches_its_lock_file_while_it_holds_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("awp_pipelines.core.engine.runlock.LOCK_BEAT_S", 0.2)
    path = tmp_path / "pr-5.lock"
    lock = RunLock(path).acquire()
    try:
        old = time.time() - 100
        os.utime(path, (old, old))
        deadline = time.monotonic() + 60  # against a hang only: the holder touches it within 0.2 s
        while path.stat().st_mtime == old and time.monotonic() < deadline:
            time.sleep(0.05)
        assert path.stat().st_mtime > old
    finally:
        lock.release()
    assert not path.exists()


def test_garbage_in_a_lock_file_is_a_crash_leftover_and_reclaimed(tmp_path: Path) -> None:
    path = tmp_path / "pr-4.lock"
    path.write_text("{half a lock")
    with RunLock(path) as lock:
        assert lock.held and lock.reclaimed is None


def test_release_leaves_a_lock_that_is_no_longer_ours(tmp_path: Path) -> None:
    path = tmp_path / "pr-5.lock"
    lock = RunLock(path).acquire()
    other = LockInfo(pid=os.getppid(), start_time=process_start_time(os.getppid()), host=socket.gethostname(),
                     since="2026-11-30T00:00:00+00:00")
    path.write_text(other.model_dump_json())
    lock.release()
    assert LockInfo.model_validate_json(path.read_text()) == other


def test_the_same_process_may_nest_the_lock_and_the_outer_release_frees_it(tmp_path: Path) -> None:
    path = tmp_path / "pr-6.lock"
    with RunLock(path) as outer:
        with RunLock(path) as inner:
            assert inner.nested and inner.held
        assert path.exists() and outer.held
    assert not path.exists()


def test_run_lock_names_a_file_under_locks_and_refuses_path_names(tmp_path: Path) -> None:
    assert run_lock(tmp_path, "pr-1").path == tmp_path / "locks" / "pr-1.lock"
    with pytest.raises(ValueError):
        run_lock(tmp_path, "../x")


RACER = textwrap.dedent("""\
    import sys, time
    from awp_pipelines.core.engine.runlock import RunLock, RunLockHeld
    go = float(sys.argv[2])
    while time.time() < go:
        time.sleep(0.001)
    try:
        lock = RunLock(sys.argv[1]).acquire()
    except RunLockHeld as err:
        print("refused", err.holder.pid if err.holder else "?", flush=True)
        sys.exit(0)
    print("won", flush=True)
    time.sleep(3)
    lock.release()
    """)


def test_of_eight_racing_processes_exactly_one_wins_and_the_rest_name_it(
        tmp_path: Path, reliability_row: Callable[..., None]) -> None:
    path = tmp_path / "pr-race.lock"
    started = time.monotonic()
    go = time.time() + 2.0  # every racer imports first, then all try at once
    racers = [subprocess.Popen([sys.executable, "-c", RACER, str(path), str(go)], stdout=subprocess.PIPE,
                               text=True) for _ in range(8)]
    outputs = {r.pid: r.communicate(timeout=60)[0].split() for r in racers}
    winners = [pid for pid, out in outputs.items() if out == ["won"]]
    refusals = [out for out in outputs.values() if out and out[0] == "refused"]
    named = sum(out == ["refused", str(winners[0])] for out in refusals) if len(winners) == 1 else 0
    reliability_row("two runners on one packet run (lock contention)", tries=1,
                    survived=int(len(winners) == 1 and named == 7), seconds=time.monotonic() - started,
                    note="8 processes race; exactly one holds, 7 refuse naming its pid")
    assert len(winners) == 1, outputs
    assert named == 7, outputs
    assert not path.exists()


def test_awp_repair_takes_the_packets_lock_too(tmp_path: Path, make_git_repo: Callable[[Path], Path]) -> None:
    """A repair by hand is a runner like `awp run`: while one holds the packet, the other is refused by pid."""
    from reliability.crash import AWP, write_packet

    packet = write_packet(tmp_path / "p", make_git_repo)
    child = start_holder(packet / ".awp" / "locks" / "packet.lock")
    try:
        refused = subprocess.run([AWP, "repair", str(packet), "01", "--note", "try again"], capture_output=True,
                                 text=True, timeout=120)
    finally:
        child.kill()
        child.wait()
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert f"already being run by pid {child.pid}" in refused.stderr and "Traceback" not in refused.stderr
    assert not (packet / ".awp" / "events").exists()  # nothing started
