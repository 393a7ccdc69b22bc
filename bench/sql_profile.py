"""Where an `awp run`'s storage time goes: every SQL statement, connection and commit of a chain of trivial
prompts (bench/prompt_overhead.py's packet), grouped by statement shape and by the AWP call site, against
bare Dagster running the same assets and checks; and the event rows each writes per prompt, by type.

    .venv/bin/python bench/sql_profile.py [--size 20] [--top 25] [--demo]

--demo: the demo packet as bench/attempt_overhead.py runs it instead (five Attempts, recovery on: the
selection in one run, then a run per recovery Attempt), figures per Attempt.

A statement's site is the innermost frame of awp_pipelines on its stack (file:function:line); statements
reached from the runner only through Dagster's execution of the run (step events, run creation) count as
Dagster's own. Untimed elsewhere: the listeners cost time themselves, so compare shares, not the wall."""

# No `from __future__ import annotations`: prompt_overhead's assets need real annotations.
import argparse
import re
import sqlite3
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

from sqlalchemy import event
from sqlalchemy.engine import Engine

sys.path.insert(0, str(Path(__file__).resolve().parent))
import prompt_overhead  # noqa: E402

PKG = "/awp_pipelines/"
# Frames through which the runner hands the run to Dagster: below them, Dagster's own execution.
DAGSTER_ENTRY = ("execute_run", "execute_in_process", "execute_run_iterator")


class Tally:
    def __init__(self) -> None:
        self.stmt_time: dict[tuple[str, str], float] = defaultdict(float)  # (owner/site, shape) → s
        self.stmt_count: Counter[tuple[str, str]] = Counter()
        self.site_time: dict[str, float] = defaultdict(float)
        self.site_count: Counter[str] = Counter()
        self.connects: Counter[str] = Counter()
        self.connect_time: dict[str, float] = defaultdict(float)
        self.commits: Counter[str] = Counter()
        self.commit_time: dict[str, float] = defaultdict(float)
        self.close_time: dict[str, float] = defaultdict(float)


TALLY = Tally()
_starts: list[float] = []


def site() -> str:
    """`dagster` or the innermost AWP frame that made the call (file:function)."""
    frame = sys._getframe(2)
    below = None
    while frame is not None:
        name = frame.f_code.co_filename
        if PKG in name:
            if below is not None and below.f_code.co_name in DAGSTER_ENTRY:
                return "dagster"
            return f"{name.split(PKG)[1]}:{frame.f_code.co_name}"
        below, frame = frame, frame.f_back
    return "dagster"


def shape(statement: str) -> str:
    s = re.sub(r"\s+", " ", statement).strip()
    s = re.sub(r"\((?:\?, )+\?\)", "(?…)", s)
    s = re.sub(r"\(__\[POSTCOMPILE_\w+\]\)", "(…)", s)
    return s[:150]


@event.listens_for(Engine, "before_cursor_execute")
def _before(conn, cursor, statement, parameters, context, executemany):  # type: ignore[no-untyped-def]
    _starts.append(time.perf_counter())


@event.listens_for(Engine, "after_cursor_execute")
def _after(conn, cursor, statement, parameters, context, executemany):  # type: ignore[no-untyped-def]
    took = time.perf_counter() - _starts.pop()
    where = site()
    TALLY.stmt_time[(where, shape(statement))] += took
    TALLY.stmt_count[(where, shape(statement))] += 1
    TALLY.site_time[where] += took
    TALLY.site_count[where] += 1


class _TimedConnection(sqlite3.Connection):
    def commit(self) -> None:
        t = time.perf_counter()
        super().commit()
        where = site()
        TALLY.commits[where] += 1
        TALLY.commit_time[where] += time.perf_counter() - t

    def close(self) -> None:
        t = time.perf_counter()
        super().close()
        TALLY.close_time[site()] += time.perf_counter() - t


_connect = sqlite3.dbapi2.connect


def _timed_connect(*args, **kwargs):  # type: ignore[no-untyped-def]
    t = time.perf_counter()
    kwargs.setdefault("factory", _TimedConnection)
    conn = _connect(*args, **kwargs)
    where = site()
    TALLY.connects[where] += 1
    TALLY.connect_time[where] += time.perf_counter() - t
    return conn


def event_rows(db: Path) -> Counter[str]:
    with sqlite3.connect(db) as conn:
        return Counter({str(t): n for t, n in conn.execute(
            "SELECT dagster_event_type, count(*) FROM event_logs GROUP BY dagster_event_type")})


def report(name: str, tally: Tally, size: int, wall: float, top: int) -> list[str]:
    lines = [f"== {name}: {size} prompts, wall {wall * 1e3 / size:.1f} ms per prompt (listeners on)"]
    total_sql = sum(tally.site_time.values())
    total_commit = sum(tally.commit_time.values())
    total_conn = sum(tally.connect_time.values()) + sum(tally.close_time.values())
    lines.append(f"   per prompt: {sum(tally.site_count.values()) / size:.1f} statements "
                 f"{total_sql * 1e3 / size:.1f} ms; {sum(tally.connects.values()) / size:.1f} connections "
                 f"{total_conn * 1e3 / size:.1f} ms (open and close); {sum(tally.commits.values()) / size:.1f} commits "
                 f"{total_commit * 1e3 / size:.1f} ms")
    lines.append("   by site (per prompt): statements ms | connections open+close ms | commits ms")
    sites = set(tally.site_time) | set(tally.connects) | set(tally.commits)
    for where in sorted(sites, key=lambda s: -(tally.site_time[s] + tally.commit_time[s] + tally.close_time[s])):
        lines.append(f"     {tally.site_count[where] / size:6.1f} {tally.site_time[where] * 1e3 / size:7.2f} | "
                     f"{tally.connects[where] / size:5.1f} "
                     f"{(tally.connect_time[where] + tally.close_time[where]) * 1e3 / size:6.2f} | "
                     f"{tally.commits[where] / size:5.1f} "
                     f"{tally.commit_time[where] * 1e3 / size:6.2f}  {where}")
    lines.append(f"   top {top} statement shapes (per prompt): count ms  site  shape")
    for (where, stmt), took in sorted(tally.stmt_time.items(), key=lambda kv: -kv[1])[:top]:
        lines.append(f"     {tally.stmt_count[(where, stmt)] / size:5.1f} {took * 1e3 / size:6.2f}  {where}  {stmt}")
    return lines


def demo_report(top: int) -> list[str]:
    """The demo packet under `run_packet` on a fresh embedded instance (a warm-up first), per Attempt."""
    global TALLY
    import tempfile

    import attempt_overhead as bench

    with tempfile.TemporaryDirectory(prefix="awp-sqlprof-") as tmp:
        scratch = Path(tmp)
        bench._isolate(scratch / "home")
        demo = bench.Demo.create(scratch)
        for name in ("warm", "measured"):
            demo.reset()
            with bench._sqlite_instance(scratch / name / "dagster") as (instance, _):
                TALLY = Tally()
                start = time.perf_counter()
                rep = bench._dagster_repetition("sqlite", demo, scratch / name / "state", instance, skip_stored=True)
                wall = time.perf_counter() - start
            dbs = list((scratch / name / "dagster").rglob("event_log.db"))
        lines = report("awp run, demo packet (per Attempt)", TALLY, len(rep.samples), wall, top)
        rows = event_rows(dbs[0]) if dbs else Counter()
        lines.append(f"== event rows per Attempt by dagster_event_type ({len(rep.samples)} Attempts)")
        lines += [f"     {n / len(rep.samples):6.2f}  {kind}" for kind, n in rows.most_common()]
        return lines


def main(argv: list[str] | None = None) -> int:
    global TALLY
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=20)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--demo", action="store_true")
    args = parser.parse_args(argv)
    import tempfile

    sqlite3.dbapi2.connect = _timed_connect  # type: ignore[assignment]  # what SQLAlchemy's pysqlite calls
    if args.demo:
        print("\n".join(demo_report(args.top)))
        return 0
    out: list[str] = []
    with tempfile.TemporaryDirectory(prefix="awp-sqlprof-") as tmp:
        prompt_overhead.awp_seconds(Path(tmp) / "warm-awp", 2)
        prompt_overhead.bare_seconds(Path(tmp) / "warm-bare", 2)
        rows = {}
        for name, fn in (("bare Dagster", prompt_overhead.bare_seconds), ("awp run", prompt_overhead.awp_seconds)):
            TALLY = Tally()
            folder = Path(tmp) / name.replace(" ", "_")
            wall = fn(folder, args.size)
            out += report(name, TALLY, args.size, wall, args.top)
            dbs = list((folder / "instance").rglob("event_log.db"))
            rows[name] = event_rows(dbs[0]) if dbs else Counter()
    out.append(f"== event rows per prompt by dagster_event_type ({args.size} prompts)")
    kinds = sorted(set(rows["bare Dagster"]) | set(rows["awp run"]),
                   key=lambda k: -(rows["awp run"][k] + rows["bare Dagster"][k]))
    out.append(f"     {'bare':>6} {'awp':>6}  type")
    bare, awp = rows["bare Dagster"], rows["awp run"]
    for kind in kinds:
        out.append(f"     {bare[kind] / args.size:6.2f} {awp[kind] / args.size:6.2f}  {kind}")
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
