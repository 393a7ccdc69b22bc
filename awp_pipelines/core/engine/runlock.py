"""One runner per packet run: a lock file that names its holder (pid, process start time, host, since when).

Two `awp run` on one work tree interleave their agents' edits and commit each other's work, so the second one
must refuse, naming the first. The lock file is created with O_CREAT|O_EXCL; every acquire and release runs
under a short flock on a sidecar guard file, so checking a lock for staleness and replacing it is one step
and no one ever reads a half-written lock. A lock is stale when its process is gone, or when its pid now
belongs to a process that started at another time (pids are reused): then it is reclaimed. A holder on
another host (a lock on a shared filesystem) is judged by its beat instead: it touches the lock file every
LOCK_BEAT_S seconds while it holds it, and a file untouched for four beats is stale. A crash
(`kill -9`) therefore never wedges a packet; a live holder is never robbed.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from awp_pipelines.core.engine.hosts import host_id

if TYPE_CHECKING:
    from awp_pipelines.core.packet.packet import Packet

LOCK_SUFFIX = ".lock"
LOCK_BEAT_S = 15.0


class LockInfo(BaseModel):
    """The lock file's content (JSON)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    pid: int = Field(description="The holder's process id.")
    start_time: int | None = Field(description="/proc/<pid>/stat field 22: clock ticks after boot when the "
                                   "process started; tells a live holder from a reused pid.")
    host: str = Field(description="Where the holder runs: a pid says nothing about another machine.")
    since: str = Field(description="When the lock was taken (UTC, ISO 8601).")
    what: str = Field("", description="What is locked, for the refusal message (e.g. 'packet run pr-1a2b').")
    beat_s: float | None = Field(None, description="The holder touches the lock file this often (its mtime): "
                                 "how a holder on another host is judged, its pid meaning nothing here.")


class RunLockHeld(Exception):
    """Someone else holds the lock: the message names them."""

    def __init__(self, path: Path, holder: LockInfo | None, reason: str = "") -> None:
        self.path = path
        self.holder = holder
        if holder is None:
            text = f"{path} is locked ({reason})"
        else:
            where = "" if holder.host == host_id() else f" on host {holder.host}"
            what = holder.what or str(path)
            text = f"{what} is already being run by pid {holder.pid}{where} since {holder.since}"
        super().__init__(f"{text}; wait for it to finish or stop that process (lock file: {path})")


def process_start_time(pid: int) -> int | None:
    """Field 22 of /proc/<pid>/stat, or None when there is no such process (or no /proc)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # Field 2 (comm) is in parentheses and may hold spaces or ')': fields 3.. follow the last ')'.
    fields = stat[stat.rindex(")") + 2:].split()
    return int(fields[22 - 3])


class _AlreadyOurs(Exception):
    pass


def _is_this_process(info: LockInfo) -> bool:
    pid = os.getpid()
    return info.host == host_id() and info.pid == pid and info.start_time == process_start_time(pid)


def _alive(info: LockInfo, path: Path) -> bool:
    if info.host != host_id():
        # Another machine's process (a lock on a shared filesystem): alive while it keeps touching the file.
        return info.beat_s is None or _fresh(path, info.beat_s)
    try:
        os.kill(info.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, owned by someone else
    return info.start_time is None or process_start_time(info.pid) == info.start_time


def _fresh(path: Path, beat_s: float) -> bool:
    """Touched within four beats and some slack (the bound of orchestration/ledger/liveness.py's beats)."""
    try:
        return time.time() - path.stat().st_mtime <= 4 * beat_s + 10
    except FileNotFoundError:
        return False


def _touching(path: Path, info: LockInfo, done: threading.Event) -> None:
    """The holder's beat: the lock file's mtime, refreshed while the lock is still this holder's."""
    while not done.wait(info.beat_s or LOCK_BEAT_S):
        try:
            if _read(path) != info:
                return
            os.utime(path)
        except (OSError, ValueError):
            continue


@contextlib.contextmanager
def _guard(path: Path) -> Iterator[None]:
    """Serialise acquire and release of one lock between processes (held for microseconds)."""
    fd = os.open(str(path) + ".guard", os.O_CREAT | os.O_RDWR, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing drops the flock


def _read(path: Path) -> LockInfo | None:
    """The lock's holder; None when the file is gone. Unreadable content raises ValueError."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    try:
        return LockInfo.model_validate_json(text)
    except ValidationError as err:
        raise ValueError(f"unreadable lock file {path}") from err


class RunLock:
    """`with RunLock(path, what="packet run pr-1"):` — or acquire() / release().

    Reentrant per process: `awp run` holds the lock for the whole packet and the Attempt step (which also runs
    under the daemon, in a process of its own) takes it again; in the same process that nested acquire
    succeeds and its release leaves the outer lock in place.
    """

    def __init__(self, path: Path | str, what: str = "") -> None:
        self.path = Path(path)
        self.what = what
        self.info: LockInfo | None = None
        self.nested = False  # this process already held it when acquire() was called
        self.reclaimed: LockInfo | None = None  # the stale holder this acquire replaced, if any
        self._beating: threading.Event | None = None

    def acquire(self) -> RunLock:
        """Take the lock or raise RunLockHeld naming the holder. A stale lock is replaced."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        pid = os.getpid()
        mine = LockInfo(pid=pid, start_time=process_start_time(pid), host=host_id(),
                        since=datetime.now(UTC).isoformat(timespec="seconds"), what=self.what, beat_s=LOCK_BEAT_S)
        with _guard(self.path):
            for _ in range(2):  # a second try only after removing a stale lock
                try:
                    fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
                except FileExistsError:
                    try:
                        self._reclaim_or_refuse()
                    except _AlreadyOurs:
                        self.nested = True
                        return self
                    continue
                with os.fdopen(fd, "w", encoding="utf-8") as out:
                    out.write(mine.model_dump_json())
                    out.flush()
                    os.fsync(out.fileno())
                self.info = mine
                self._beating = threading.Event()
                threading.Thread(target=_touching, args=(self.path, mine, self._beating), daemon=True,
                                 name="awp-lock-beat").start()
                return self
        raise RunLockHeld(self.path, None, "could not replace a stale lock")  # pragma: no cover

    def _reclaim_or_refuse(self) -> None:
        try:
            holder = _read(self.path)
        except ValueError:
            holder = None  # under the guard no one is mid-write: garbage is a crash's leftover, stale
        if holder is not None and _is_this_process(holder):
            raise _AlreadyOurs
        if holder is not None and _alive(holder, self.path):
            raise RunLockHeld(self.path, holder)
        self.reclaimed = holder
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    def release(self) -> None:
        """Remove the lock if it is still ours (a reclaimed-from-us lock is left to its new holder)."""
        if self.nested:
            self.nested = False
            return
        if self.info is None:
            return
        if self._beating is not None:
            self._beating.set()
        with _guard(self.path):
            try:
                current = _read(self.path)
            except ValueError:
                current = None
            if current == self.info:
                self.path.unlink()
        self.info = None

    @property
    def held(self) -> bool:
        return self.info is not None or self.nested

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.release()


def run_lock(state_root: Path, name: str, what: str = "") -> RunLock:
    """The lock `<state_root>/locks/<name>.lock`; `name` is an identifier (a packet run id, or `packet`)."""
    if not name or "/" in name or name.startswith("."):
        raise ValueError(f"lock name {name!r} is not a plain file name")
    return RunLock(state_root / "locks" / f"{name}{LOCK_SUFFIX}", what=what or name)



def live_holder(state_root: Path, name: str) -> LockInfo | None:
    """Who holds the lock now (None: free, stale, or unreadable)."""
    path = run_lock(state_root, name).path
    try:
        info = _read(path)
    except ValueError:
        return None
    return info if info is not None and _alive(info, path) else None


@contextlib.contextmanager
def packet_lock(packet: Packet, state_root: Path) -> Iterator[None]:
    """One runner per packet (`awp run`, `awp repair`, the SDK's run and repair): two on one work tree would
    interleave their agents' edits and commits. A second is refused with the holder's pid (a PacketError); a
    dead holder's lock is reclaimed."""
    from awp_pipelines.core.packet.errors import PacketError

    lock = run_lock(state_root, "packet", what=f"packet {packet.name}")
    try:
        lock.acquire()
    except RunLockHeld as err:
        raise PacketError(packet.manifest_file, str(err), key="lock",
                          hint="wait for it to finish, or stop that process") from None
    try:
        yield
    finally:
        lock.release()
