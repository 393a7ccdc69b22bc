"""Is the runner alive, is the agent making progress, what changed in the repos: the facts `awp watch` shows.

Pure core, no Dagster: a run lock on disk, a progress record on disk, git. Liveness follows Prompt Runner's
`run.pid`: the lock holds `PID STARTTIME` (the process start time from /proc, in clock ticks since boot), so
a lock whose process is gone, is a zombie, or is a different process that reused the pid, is stale; a stale
lock is reclaimed. Under the Dagster daemon, liveness comes from the runs themselves, not from this lock.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Literal

from awp_pipelines.workspace import WorkspaceError, changed_paths, git

DEFAULT_PROGRESS_TIMEOUT_S = 3600.0  # Prompt Runner's progress_timeout
Violation = Literal["not_running", "progress_stale"]


class LockHeld(RuntimeError):
    """Another live process holds the run lock."""

    def __init__(self, path: Path, owner: RunLock) -> None:
        self.path, self.owner = path, owner
        super().__init__(f"{path}: held by live process {owner.pid}")


# -- processes -----------------------------------------------------------------------------------------

def process_start_time(pid: int) -> int | None:
    """The process's start time (clock ticks since boot, /proc/<pid>/stat field 22); None when it is gone or
    a zombie (it has exited; only its parent has not reaped it yet)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # The command name (field 2) may hold spaces and parentheses: the fields after it start after the last ')'.
    fields = stat[stat.rfind(")") + 2:].split()
    if len(fields) < 20 or fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


@dataclass(frozen=True)
class RunLock:
    pid: int
    start_time: int

    def render(self) -> str:
        return f"{self.pid} {self.start_time}\n"

    @classmethod
    def parse(cls, text: str) -> RunLock | None:
        parts = text.split()
        if len(parts) != 2 or not all(p.isdigit() for p in parts):
            return None
        return cls(int(parts[0]), int(parts[1]))

    @classmethod
    def for_process(cls, pid: int | None = None) -> RunLock:
        pid = os.getpid() if pid is None else pid
        start = process_start_time(pid)
        if start is None:
            raise ProcessLookupError(f"process {pid} is not running")
        return cls(pid, start)


@dataclass(frozen=True)
class Liveness:
    state: Literal["running", "stale", "absent"]
    reason: str
    lock: RunLock | None = None

    @property
    def running(self) -> bool:
        return self.state == "running"


def read_lock(path: Path | str) -> RunLock | None:
    try:
        return RunLock.parse(Path(path).read_text())
    except FileNotFoundError:
        return None


def liveness(path: Path | str) -> Liveness:
    """running: the lock's process is alive with the same start time; stale: it is not; absent: no lock."""
    file = Path(path)
    try:
        text = file.read_text()
    except FileNotFoundError:
        return Liveness("absent", "no run lock")
    lock = RunLock.parse(text)
    if lock is None:
        return Liveness("stale", "unreadable run lock")
    start = process_start_time(lock.pid)
    if start is None:
        return Liveness("stale", f"process {lock.pid} is gone", lock)
    if start != lock.start_time:
        return Liveness("stale", f"pid {lock.pid} is another process now (start time differs)", lock)
    return Liveness("running", f"process {lock.pid} is alive", lock)


def acquire(path: Path | str, pid: int | None = None) -> RunLock:
    """Take the run lock for `pid` (default: this process): exclusive create; a stale lock is reclaimed, a live
    one raises LockHeld. Two processes reclaiming at once: one wins the create, the other sees it live."""
    file = Path(path)
    file.parent.mkdir(parents=True, exist_ok=True)
    mine = RunLock.for_process(pid)
    for _ in range(3):
        try:
            fd = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            state = liveness(file)
            if state.running and state.lock is not None:
                raise LockHeld(file, state.lock) from None
            _remove_if_unchanged(file, state.lock)
            continue
        with os.fdopen(fd, "w") as fh:
            fh.write(mine.render())
        return mine
    state = liveness(file)
    raise LockHeld(file, state.lock or mine)


def release(path: Path | str, lock: RunLock) -> bool:
    """Remove the lock only when it is still ours (its content equals `lock`); True when removed."""
    file = Path(path)
    if read_lock(file) != lock:
        return False
    file.unlink(missing_ok=True)
    return True


def _remove_if_unchanged(file: Path, seen: RunLock | None) -> None:
    # Another process may have reclaimed it between our read and now: remove only what we judged stale.
    if read_lock(file) == seen:
        file.unlink(missing_ok=True)


# -- progress ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Progress:
    state: Literal["fresh", "stale", "missing", "invalid"]
    age_s: float | None = None
    summary: str | None = None
    cursor: str | None = None
    unit: str | None = None

    @property
    def violation(self) -> bool:
        # Unreadable fails closed, as Prompt Runner does; a missing record is not news (not every agent reports).
        return self.state in ("stale", "invalid")


def progress(path: Path | str, timeout_s: float = DEFAULT_PROGRESS_TIMEOUT_S, now: float | None = None) -> Progress:
    """The agent's latest progress record (`{token, cursor, unit, summary, updated_at}`, replaced atomically)
    and whether it is older than `timeout_s`. Age from `updated_at`, else from the file's mtime."""
    file = Path(path)
    now = time.time() if now is None else now
    try:
        text = file.read_text()
        mtime = file.stat().st_mtime
    except FileNotFoundError:
        return Progress("missing")
    try:
        record = json.loads(text)
        if not isinstance(record, dict):
            raise ValueError("not an object")
        stamp = record.get("updated_at")
        updated = datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp() if stamp else mtime
    except ValueError:
        return Progress("invalid", age_s=max(0.0, now - mtime))
    age = max(0.0, now - updated)
    fields = {k: (str(record[k]) if record.get(k) is not None else None) for k in ("summary", "cursor", "unit")}
    return Progress("stale" if age > timeout_s else "fresh", age_s=age, **fields)


# -- repos ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class RepoActivity:
    repo: str
    head: str | None
    dirty: list[str] = field(default_factory=list)
    new_commits: list[tuple[str, str]] = field(default_factory=list)  # (sha, subject), newest first
    last_change: float | None = None  # epoch seconds: newest of HEAD's commit time and dirty files' mtimes


def repo_activity(repo: Path | str, since: str | None = None) -> RepoActivity:
    """Dirty files and the commits made since `since` (e.g. the Attempt's checkpoint sha) in one repo."""
    path = Path(repo)
    head = git(path, "rev-parse", "--verify", "--quiet", "HEAD", ok_codes=(0, 1)).stdout.strip() or None
    dirty = changed_paths(path)
    commits: list[tuple[str, str]] = []
    last: float | None = None
    if head:
        if since:
            try:
                out = git(path, "log", "--format=%H%x00%s", f"{since}..HEAD", "--").stdout
            except WorkspaceError:  # `since` unknown here (e.g. history rewritten): no claim about new commits
                out = ""
            commits = [(sha, subject) for sha, _, subject in (line.partition("\0") for line in out.splitlines())]
        head_time = git(path, "log", "-1", "--format=%ct", "HEAD").stdout.strip()
        last = float(head_time) if head_time else None
    for name in dirty:
        try:
            mtime = (path / name).stat().st_mtime
        except FileNotFoundError:  # a deleted file: its change has no mtime to show
            continue
        last = mtime if last is None else max(last, mtime)
    return RepoActivity(str(repo), head, dirty, commits, last)


def quiet_minutes(times: list[float | None], now: float | None = None) -> float | None:
    """Minutes since the newest of `times` (activity stamps, epoch seconds); None when there is none."""
    known = [t for t in times if t is not None]
    if not known:
        return None
    now = time.time() if now is None else now
    return max(0.0, (now - max(known)) / 60.0)


def violations(live: Liveness, prog: Progress, finished: bool = False) -> list[Violation]:
    """Prompt Runner's watch violations: the runner is not running while work remains; progress is stale."""
    found: list[Violation] = []
    if not finished and not live.running:
        found.append("not_running")
    if not finished and prog.violation:
        found.append("progress_stale")
    return found


# -- one look ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class WatchReport:
    """One `awp watch` observation: liveness, progress, per-repo activity, minutes quiet and violations."""

    liveness: Liveness
    progress: Progress
    repos: list[RepoActivity]
    quiet_minutes: float | None
    violations: list[Violation]

    def as_dict(self) -> dict[str, object]:
        """For `--json` lines: plain values only."""
        return {"running": self.liveness.running, "liveness": asdict(self.liveness), "progress": asdict(self.progress),
                "repos": [asdict(r) for r in self.repos], "quiet_minutes": self.quiet_minutes,
                "violations": list(self.violations)}

    def line(self) -> str:
        """Prompt Runner's watch line: `runner=UP|DOWN quiet=Nmin dirty=N commits=N progress=STATE [violations]`."""
        quiet = "?" if self.quiet_minutes is None else f"{self.quiet_minutes:.0f}"
        parts = [f"runner={'UP' if self.liveness.running else 'DOWN'}", f"quiet={quiet}min",
                 f"dirty={sum(len(r.dirty) for r in self.repos)}",
                 f"commits={sum(len(r.new_commits) for r in self.repos)}", f"progress={self.progress.state}"]
        if self.violations:
            parts.append("violations=" + ",".join(self.violations))
        return " ".join(parts)


def watch_once(lock_path: Path | str, progress_path: Path | str | None,
               repos: Mapping[str, tuple[Path | str, str | None]],
               progress_timeout_s: float = DEFAULT_PROGRESS_TIMEOUT_S, finished: bool = False,
               now: float | None = None) -> WatchReport:
    """Look once. `repos` maps a repo name to (path, sha the Attempt started from); `finished`: no work remains
    (then neither a dead runner nor old progress is a violation)."""
    now = time.time() if now is None else now
    live = liveness(lock_path)
    prog = progress(progress_path, progress_timeout_s, now) if progress_path is not None else Progress("missing")
    activity = [replace(repo_activity(path, since), repo=name) for name, (path, since) in repos.items()]
    stamps = [a.last_change for a in activity] + [now - prog.age_s if prog.age_s is not None else None]
    return WatchReport(live, prog, activity, quiet_minutes(stamps, now), violations(live, prog, finished))

