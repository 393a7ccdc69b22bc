"""Per-Attempt cost of the Dagster layer over the pure Attempt engine, on a copy of the demo packet.

    .venv/bin/python bench/attempt_overhead.py [--repeat N] [--json] [--profile]

Modes, each repeated N times on a fresh workspace (interleaved, so machine drift hits all of them alike):

  engine    `execute_attempt` called directly, the AttemptSpec built as the asset's compute builds it, the
            recovery loop driven by the same pure decision function (the baseline);
  sqlite    `run_packet` in process on an embedded SQLite instance: the selection in one Dagster run,
            then one run per recovery Attempt (as the UI and the recovery sensor do);
  postgres  the same on PostgreSQL, when AWP_TEST_PG_URL is set (tests/pg.sh start DIR prints one).

Recovery is on, so the demo makes 5 Attempts per repetition. Only ratios measured in this one run mean
anything: the machines are shared and noisy. See bench/README.md.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "assets" / "demo"
PROVIDERS = REPO / "resources" / "providers.yaml"
DB_SUFFIXES = (".db", ".db-wal", ".db-shm", ".db-journal")


def _isolate(base: Path) -> None:
    """No developer config may change the plan: own config homes, no provider/model from the environment."""
    for var, name in (("AWP_CONFIG_HOME", "awp-config"), ("XDG_CONFIG_HOME", "xdg-config"),
                      ("DAGSTER_HOME", "dagster-home")):
        (base / name).mkdir(parents=True, exist_ok=True)
        os.environ[var] = str(base / name)
    for var in ("AWP_PROVIDER", "AWP_MODEL", "AWP_PROVIDERS", "AWP_DAGSTER_HOME"):
        os.environ.pop(var, None)


# -- the demo packet, copied -------------------------------------------------------------------------------

def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


@dataclass
class Demo:
    root: Path
    workspace: Path
    base: str  # the workspace commit every repetition starts from

    @classmethod
    def create(cls, where: Path) -> Demo:
        root = where / "demo"
        root.mkdir(parents=True)
        for name in ("packet.yaml", "setup.sh"):
            shutil.copy2(DEMO / name, root / name)
        shutil.copytree(DEMO / "prompts", root / "prompts")
        subprocess.run(["bash", str(root / "setup.sh")], check=True, capture_output=True)
        workspace = root / "workspace"
        return cls(root, workspace, _git(workspace, "rev-parse", "HEAD").strip())

    def reset(self) -> None:
        _git(self.workspace, "reset", "--hard", "--quiet", self.base)
        _git(self.workspace, "clean", "-fdxq")


# -- measurements ------------------------------------------------------------------------------------------

@dataclass
class Sample:
    """One Attempt."""

    attempt: str  # prompt id . attempt number, e.g. 02.a2
    wall_s: float  # the whole per-Attempt step in this mode
    engine_s: float | None = None  # execute_attempt alone (engine: perf_counter; Dagster: the record's duration_s)
    record_bytes: int | None = None  # the `awp/record` metadata, compact JSON


@dataclass
class Repetition:
    mode: str
    samples: list[Sample]
    total_s: float  # the whole packet, compile and setup included
    store_bytes: int | None = None  # event-log storage growth (SQLite files, or pg_database_size)
    results: list[str] = field(default_factory=list)


def _engine_repetition(demo: Demo, state: Path) -> Repetition:
    """The pure engine, Attempt by Attempt, driven by the same pure decision code as the sensor and `awp run`
    (`launches.first_launch` and `launches.continuation`), with no Dagster at all."""
    from awp_pipelines.core.decisions.agent_run import DecisionInput
    from awp_pipelines.core.decisions.next_launches import continuation, first_launch
    from awp_pipelines.core.decisions.policy import chain_of
    from awp_pipelines.core.engine.attempt_record import AttemptIdentity, AttemptRecord, AttemptTarget
    from awp_pipelines.core.engine.attempts import AttemptSpec, execute_attempt, repair_instructions
    from awp_pipelines.core.packet.packet import load_packet
    from awp_pipelines.core.packet.providers_config import load_catalog
    from awp_pipelines.core.planning.plan import PlanContext, build_plan
    from awp_pipelines.core.providers.registry import adapter_for
    from awp_pipelines.core.records.events import EventSink
    from awp_pipelines.core.records.run_tags import agent_run_id, attempt_id

    started = time.perf_counter()
    packet = load_packet(demo.root)
    catalog = load_catalog(PROVIDERS)
    packet_run = "pr-bench" + uuid.uuid4().hex[:4]
    samples: list[Sample] = []
    results: list[str] = []
    for plan in build_plan(packet, PlanContext(catalog=catalog)).prompts:
        prompt = packet.prompt(plan.id)
        agent_run = agent_run_id(packet_run, prompt.id)
        chain = chain_of(plan.provider, plan.model, plan.effort, catalog.accounts_of(plan.accounts, plan.provider),
                         plan.fallback)
        pstate = DecisionInput(prompt.id, prompt.recovery, chain)
        launch = first_launch(pstate)
        records: list[AttemptRecord] = []
        while True:
            t0 = time.perf_counter()
            identity = AttemptIdentity(attempt_id=attempt_id(agent_run, launch.number), agent_run=agent_run,
                                       number=launch.number, packet=packet.name, packet_run=packet_run,
                                       prompt=prompt.id, mode=launch.mode, parent_run=launch.parent_run)
            pspec = catalog.providers[launch.target.provider]
            target = AttemptTarget(provider=launch.target.provider, provider_kind=pspec.kind,
                                   account=launch.target.account, model=launch.target.model or plan.model,
                                   effort=launch.target.effort, reason=launch.reason)
            secrets = catalog.account_secrets(target.account)
            sink = EventSink(state / "events" / packet_run / prompt.id / f"{identity.attempt_id}.jsonl",
                             identity.attempt_id, secrets=secrets.values())
            last = records[-1] if records else None
            spec = AttemptSpec(packet=packet, prompt=prompt, plan=plan, identity=identity, target=target,
                               commit=True, simulate=prompt.front.simulate, secret_env=secrets,
                               repair_text=repair_instructions(last) if last and launch.mode == "repair" else None,
                               restore=last.wip if last else None)
            t1 = time.perf_counter()
            record = execute_attempt(spec, adapter_for(pspec), sink)
            t2 = time.perf_counter()
            sink.transcript_markdown()
            records.append(record)
            pstate = replace(pstate, facts=tuple(r.fact() for r in records), started=len(records),
                             last_ended=time.time(), last_run="engine")
            step = continuation(pstate)
            t3 = time.perf_counter()
            samples.append(Sample(f"{prompt.id}.a{launch.number}", t3 - t0, t2 - t1,
                                  _json_bytes(record.model_dump(mode="json"))))
            if not hasattr(step, "due_at"):  # a Verdict: the AgentRun is over
                results.append(f"{prompt.id}:{record.result}")
                break
            launch = step
            time.sleep(max(0.0, launch.due_at - time.time()))
    return Repetition("engine", samples, time.perf_counter() - started, results=results)


def _handed_ledger(instance: Any) -> tuple[Any, ...]:
    """The ledger `run_packet` is handed, made where every ledger is made; none on a tree from before the ledger's
    factory (bench/attempt_before_after.sh runs this tree's phases on the `before` side's code)."""
    try:
        from awp_pipelines.orchestration.ledger.factory import ledger_of
    except ImportError:
        return ()
    return (ledger_of(instance),)


def _dagster_repetition(mode: str, demo: Demo, state: Path, instance: Any,
                        prompt_ids: list[str] | None = None, skip_stored: bool = False) -> Repetition:
    """`run_packet` in process (the selection as one run, then the recovery launches); each Attempt timed
    from the end of the one before (or the start) to its own end, as the compute reports them."""
    from awp_pipelines.core.engine.progress import AttemptEnded, ProgressEvent
    from awp_pipelines.core.packet.packet import load_packet
    from awp_pipelines.core.packet.providers_config import load_catalog
    from awp_pipelines.orchestration.assets import packet_assets
    from awp_pipelines.orchestration.compute.resources import AwpResource
    from awp_pipelines.orchestration.driver.in_process import Progress, RunOptions, run_packet

    started = time.perf_counter()
    packet = load_packet(demo.root)
    compiled = packet_assets(packet, load_catalog(PROVIDERS), AwpResource(state_dir=str(state), commit=True))
    ids = prompt_ids if prompt_ids is not None else [p.id for p in packet.prompts]
    marks = [time.perf_counter()]
    walls: list[float] = []

    def on_event(event: ProgressEvent) -> None:
        if isinstance(event, AttemptEnded):
            now = time.perf_counter()
            walls.append(now - marks[-1])
            marks.append(now)

    _, outcomes = run_packet(compiled, instance, *_handed_ledger(instance), ids, RunOptions(), Progress(event=on_event))
    total = time.perf_counter() - started
    stored = [(f"#{i}", None, 0) for i in range(len(walls))] if skip_stored else _stored_attempts(instance)
    if len(stored) != len(walls):
        raise RuntimeError(f"{mode}: {len(walls)} Attempts reported but {len(stored)} stored Attempt records")
    samples = [Sample(name, wall, engine, size) for wall, (name, engine, size) in zip(walls, stored, strict=True)]
    return Repetition(mode, samples, total, results=[f"{o.prompt}:{o.result}" for o in outcomes])


def _stored_attempts(instance: Any) -> list[tuple[str, float | None, int]]:
    """(prompt.aN, duration_s, `awp/record` bytes) of every Attempt on the instance, in launch order."""
    from dagster import DagsterEventType

    found = []
    runs = sorted(instance.get_run_records(), key=lambda r: r.create_timestamp)
    for run in runs:
        for entry in instance.all_logs(run.dagster_run.run_id, of_type={DagsterEventType.ASSET_MATERIALIZATION,
                                                                          DagsterEventType.ASSET_OBSERVATION}):
            data = entry.dagster_event.event_specific_data if entry.dagster_event else None
            payload = getattr(data, "materialization", None) or getattr(data, "asset_observation", None)
            value = payload.metadata.get("awp/record") if payload is not None else None
            record = getattr(value, "data", None)
            if isinstance(record, dict):
                ident = record["identity"]
                found.append((f"{ident['prompt']}.a{ident['number']}", record.get("duration_s"),
                              _json_bytes(record)))
    return found


def _json_bytes(data: object) -> int:
    return len(json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


# -- instances ---------------------------------------------------------------------------------------------

def _tree_bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file() and f.name.endswith(DB_SUFFIXES))


@contextmanager
def _sqlite_instance(folder: Path) -> Iterator[tuple[Any, Callable[[], int]]]:
    from awp_pipelines.orchestration.ledger.instance import open_instance

    instance = open_instance(folder, folder)  # an empty folder becomes embedded SQLite, as `awp run` does
    try:
        before = _tree_bytes(folder)
        yield instance, lambda: _tree_bytes(folder) - before
    finally:
        instance.dispose()


@contextmanager
def _postgres_instance(folder: Path, server_url: str) -> Iterator[tuple[Any, Callable[[], int]]]:
    """A database of its own per repetition, created and dropped here; Dagster's schema is made untimed."""
    import sqlalchemy as sa
    import yaml

    from awp_pipelines.orchestration.ledger.instance import open_instance

    server = sa.make_url(server_url)
    name = f"awp_bench_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(server, isolation_level="AUTOCOMMIT", poolclass=sa.pool.NullPool)
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    db = server.set(database=name)
    sizer = sa.create_engine(db, poolclass=sa.pool.NullPool)

    def size() -> int:
        with sizer.connect() as conn:
            return int(conn.execute(sa.text("SELECT pg_database_size(current_database())")).scalar_one())

    folder.mkdir(parents=True, exist_ok=True)
    config = {"storage": {"postgres": {"postgres_db": {
        "username": db.username, "password": db.password or "", "hostname": db.host, "db_name": db.database,
        "port": db.port or 5432, "scheme": "postgresql+psycopg2"}}}, "telemetry": {"enabled": False}}
    (folder / "dagster.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    instance = open_instance(folder, folder)
    try:
        instance.get_runs(limit=1)  # schema and migrations before the clock starts
        before = size()
        yield instance, lambda: size() - before
    finally:
        instance.dispose()
        sizer.dispose()
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


# -- one repetition of one mode ----------------------------------------------------------------------------

def run_mode(mode: str, demo: Demo, scratch: Path, pg_url: str | None) -> Repetition:
    demo.reset()
    folder = Path(tempfile.mkdtemp(prefix=f"{mode}-", dir=scratch))
    try:
        if mode == "engine":
            return _engine_repetition(demo, folder / "state")
        opener = _sqlite_instance(folder / "dagster") if mode == "sqlite" \
            else _postgres_instance(folder / "dagster", pg_url or "")
        with opener as (instance, growth):
            rep = _dagster_repetition(mode, demo, folder / "state", instance)
            rep.store_bytes = growth()
            return rep
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def steady_growth(demo: Demo, scratch: Path) -> float:
    """Bytes per Attempt that a second run of the packet adds to one SQLite instance (untimed): what a month of
    Attempts grows the store by, without the one-off cost of a new instance (schema, snapshots, asset rows)."""
    folder = Path(tempfile.mkdtemp(prefix="steady-", dir=scratch))
    try:
        with _sqlite_instance(folder / "dagster") as (instance, growth):
            demo.reset()
            _dagster_repetition("sqlite", demo, folder / "state", instance)
            before = growth()
            demo.reset()
            rep = _dagster_repetition("sqlite", demo, folder / "state", instance, skip_stored=True)
            return (growth() - before) / len(rep.samples)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def storage_by_event(demo: Demo, scratch: Path) -> str:
    """Where an Attempt's event-log storage goes: a second run of the packet on one SQLite instance (as
    `steady_growth`), its event rows grouped by Dagster event type (rows and bytes of the serialized event per
    Attempt), and the key-value rows AWP wrote (claims, runners, beats, stops, accounts, packet index)."""
    import sqlalchemy as sa
    from dagster._core.storage.event_log.schema import SqlEventLogStorageTable as events
    from dagster._core.storage.runs.schema import KeyValueStoreTable as kv

    folder = Path(tempfile.mkdtemp(prefix="by-event-", dir=scratch))
    try:
        with _sqlite_instance(folder / "dagster") as (instance, _):
            demo.reset()
            _dagster_repetition("sqlite", demo, folder / "state", instance)
            runs_before = {r.run_id for r in instance.get_runs()}
            kv_before = _kv_rows(instance, kv)
            demo.reset()
            rep = _dagster_repetition("sqlite", demo, folder / "state", instance, skip_stored=True)
            new_runs = [r.run_id for r in instance.get_runs() if r.run_id not in runs_before]
            attempts = len(rep.samples)
            size = sa.func.sum(sa.func.length(events.c.event))
            query = (sa.select(events.c.dagster_event_type, sa.func.count(), size)
                     .where(events.c.run_id.in_(new_runs)).group_by(events.c.dagster_event_type))
            with instance.event_log_storage.index_connection() as conn:
                rows = sorted(conn.execute(query).all(), key=lambda row: -(row[2] or 0))
            kv_after = _kv_rows(instance, kv)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    total = sum(row[2] or 0 for row in rows)
    lines = [f"event-log rows per Attempt by type ({attempts} Attempts, {len(new_runs)} runs; serialized event "
             f"bytes, {total / attempts / 1024:.1f} KiB per Attempt in all):"]
    lines += [f"  {str(kind or 'log line'):28} {count / attempts:5.1f} rows  {(size or 0) / attempts / 1024:6.1f} KiB"
              for kind, count, size in rows]
    grown = {k: v for k, v in kv_after.items() if kv_before.get(k) != v}
    by_prefix: dict[str, tuple[int, int]] = {}
    for key, value in grown.items():
        prefix = "/".join(key.split("/")[:2])
        n, size = by_prefix.get(prefix, (0, 0))
        by_prefix[prefix] = (n + 1, size + len(key) + len(value))
    lines.append("key-value rows written or changed by the second run: " + ", ".join(
        f"{prefix} {n} ({size} B)" for prefix, (n, size) in sorted(by_prefix.items())))
    return "\n".join(lines)


def _kv_rows(instance: Any, table: Any) -> dict[str, str]:
    import sqlalchemy as sa

    with instance.run_storage.connect() as conn:
        return {str(k): str(v) for k, v in conn.execute(sa.select(table.c.key, table.c.value)).all()}


def profile_one_attempt(demo: Demo, scratch: Path, top: int = 20) -> str:
    """cProfile of prompt 01 (one Attempt) through run_packet on SQLite: own time grouped by package."""
    demo.reset()
    folder = Path(tempfile.mkdtemp(prefix="profile-", dir=scratch))
    profiler = cProfile.Profile()
    with _sqlite_instance(folder / "dagster") as (instance, _):
        profiler.enable()
        _dagster_repetition("sqlite", demo, folder / "state", instance, prompt_ids=["01"])
        profiler.disable()
    stats = pstats.Stats(profiler)
    groups: dict[str, float] = {}
    total = 0.0
    for (file, _line, func), (_cc, _nc, tt, _ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        groups[_area(file, func)] = groups.get(_area(file, func), 0.0) + tt
        total += tt
    lines = [f"cProfile, one Attempt (prompt 01) through run_packet on SQLite: {total * 1000:.0f} ms profiled",
             "  own time by area:"]
    for name, tt in sorted(groups.items(), key=lambda kv: -kv[1])[:12]:
        lines.append(f"    {name:<28} {tt * 1000:8.1f} ms  {100 * tt / total:5.1f}%")
    lines.append(f"  top {top} functions by cumulative time:")
    rows = sorted(stats.stats.items(), key=lambda kv: -kv[1][3])  # type: ignore[attr-defined]
    shown = 0
    for (file, line, func), (_cc, nc, _tt, ct, _callers) in rows:
        if func.startswith("<") or "cProfile" in file or "attempt_overhead" in file:
            continue
        where = _short(file)
        lines.append(f"    {ct * 1000:8.1f} ms {nc:6d}x  {where}:{line} {func}")
        shown += 1
        if shown == top:
            break
    shutil.rmtree(folder, ignore_errors=True)
    return "\n".join(lines)


def _short(file: str) -> str:
    for marker in ("site-packages/", "awp_pipelines/"):
        if marker in file:
            return ("awp_pipelines/" if marker == "awp_pipelines/" else "") + file.split(marker, 1)[1]
    return Path(file).name


def _area(file: str, func: str) -> str:
    if file == "~":  # builtins: name them by what they talk to
        for needle, area in (("sqlite3", "sqlite3 (C)"), ("posix", "subprocess/os (C)"),
                             ("select", "subprocess/os (C)"), ("_io", "file I/O (C)"), ("sleep", "sleep"),
                             ("lock", "threads/locks (C)"), ("psycopg2", "psycopg2 (C)")):
            if needle in func:
                return area
        return "other builtins"
    if "site-packages/" in file:
        return file.split("site-packages/", 1)[1].split("/", 1)[0].removesuffix(".py")
    if "awp_pipelines/" in file:
        return "awp_pipelines"
    return "stdlib " + Path(file).stem


# -- statistics and report ---------------------------------------------------------------------------------

def _p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10, method="inclusive")[-1] if len(values) > 1 else values[0]


def summarize(reps: list[Repetition], repeat: int) -> dict[str, Any]:
    modes = list(dict.fromkeys(r.mode for r in reps))
    out: dict[str, Any] = {"repeat": repeat, "modes": {}}
    for mode in modes:
        mine = [r for r in reps if r.mode == mode]
        walls = [s.wall_s for r in mine for s in r.samples]
        engines = [s.engine_s for r in mine for s in r.samples if s.engine_s is not None]
        attempts = sum(len(r.samples) for r in mine)
        stores = [r.store_bytes / len(r.samples) for r in mine if r.store_bytes is not None and r.samples]
        records = [s.record_bytes for r in mine for s in r.samples if s.record_bytes is not None]
        out["modes"][mode] = {
            "attempts": attempts,
            "attempts_per_repetition": sorted({len(r.samples) for r in mine}),
            "results": mine[0].results,
            "wall_ms": {"median": 1000 * statistics.median(walls), "p90": 1000 * _p90(walls)},
            "engine_ms": {"median": 1000 * statistics.median(engines), "p90": 1000 * _p90(engines)}
            if engines else None,
            "packet_total_ms_per_attempt": 1000 * statistics.median(r.total_s / len(r.samples) for r in mine),
            "store_bytes_per_attempt": statistics.median(stores) if stores else None,
            "record_json_bytes": {"median": statistics.median(records), "max": max(records)} if records else None,
            "samples": [[s.attempt, round(s.wall_s, 6), None if s.engine_s is None else round(s.engine_s, 6)]
                        for r in mine for s in r.samples],
        }
    base = out["modes"].get("engine")
    if base:
        for mode, data in out["modes"].items():
            if mode == "engine":
                continue
            data["ratio_vs_engine"] = {
                "median": data["wall_ms"]["median"] / base["engine_ms"]["median"],
                "p90": data["wall_ms"]["p90"] / base["engine_ms"]["p90"],
                "paired_median": _paired_ratio(reps, mode),
            }
            data["overhead_ms_median"] = data["wall_ms"]["median"] - base["engine_ms"]["median"]
    return out


def _paired_ratio(reps: list[Repetition], mode: str) -> float | None:
    """Median over (repetition, Attempt) of mode wall / engine execute_attempt: the same Attempt, same round."""
    engine = [r for r in reps if r.mode == "engine"]
    other = [r for r in reps if r.mode == mode]
    ratios = []
    for a, b in zip(engine, other, strict=False):
        if [s.attempt for s in a.samples] != [s.attempt for s in b.samples]:
            continue
        ratios += [sb.wall_s / sa.engine_s for sa, sb in zip(a.samples, b.samples, strict=True) if sa.engine_s]
    return statistics.median(ratios) if ratios else None


def render(summary: dict[str, Any]) -> str:
    modes = summary["modes"]
    lines = [f"AWP Attempt overhead — demo packet, simulated provider, {summary['repeat']} repetitions per mode",
             f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average "
             f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}", ""]
    lines.append(f"{'mode':<10} {'attempts':>8} {'median ms':>10} {'p90 ms':>9} {'x engine':>9} {'x p90':>7} "
                 f"{'paired x':>9} {'+ms/att':>8}")
    base = modes.get("engine")
    if base:
        lines.append(f"{'engine':<10} {base['attempts']:>8} {base['engine_ms']['median']:>10.1f} "
                     f"{base['engine_ms']['p90']:>9.1f} {'1.00':>9} {'1.00':>7} {'':>9} {'':>8}"
                     "   execute_attempt alone (the baseline)")
        lines.append(f"{'':<10} {'':>8} {base['wall_ms']['median']:>10.1f} {base['wall_ms']['p90']:>9.1f} "
                     f"{base['wall_ms']['median'] / base['engine_ms']['median']:>9.2f} "
                     f"{base['wall_ms']['p90'] / base['engine_ms']['p90']:>7.2f} {'':>9} {'':>8}"
                     "   + building the spec and deciding (pure step)")
    for mode, data in modes.items():
        if mode == "engine":
            continue
        ratio = data.get("ratio_vs_engine", {})
        paired = ratio.get("paired_median")
        lines.append(f"{mode:<10} {data['attempts']:>8} {data['wall_ms']['median']:>10.1f} "
                     f"{data['wall_ms']['p90']:>9.1f} {ratio.get('median', float('nan')):>9.2f} "
                     f"{ratio.get('p90', float('nan')):>7.2f} "
                     f"{'' if paired is None else f'{paired:.2f}':>9} "
                     f"{data.get('overhead_ms_median', float('nan')):>+8.1f}   one run, then a run per recovery")
        if data["engine_ms"]:
            lines.append(f"{'':<10} {'':>8} {data['engine_ms']['median']:>10.1f} {data['engine_ms']['p90']:>9.1f}"
                         f" {'':>9} {'':>7} {'':>9} {'':>8}   of which execute_attempt (record's duration_s)")
    lines.append("")
    for mode, data in modes.items():
        if mode == "engine":
            continue
        store = data["store_bytes_per_attempt"]
        what = "SQLite files growth" if mode == "sqlite" else "pg_database_size growth"
        lines.append(f"{mode}: event-log storage per Attempt {store / 1024:.1f} KiB ({what}, median of "
                     f"repetitions); whole packet incl. compile {data['packet_total_ms_per_attempt']:.1f} ms "
                     "per Attempt")
        if data.get("steady_store_bytes_per_attempt") is not None:
            lines.append(f"{mode}: growth per Attempt of a second packet run on the same instance "
                         f"{data['steady_store_bytes_per_attempt'] / 1024:.1f} KiB")
    stored = modes.get("sqlite") or modes.get("postgres") or {}
    rec = stored.get("record_json_bytes")
    if rec:
        lines.append(f"awp/record metadata JSON per Attempt: median {rec['median'] / 1024:.1f} KiB, "
                     f"max {rec['max'] / 1024:.1f} KiB (compact JSON, as stored in the event log)")
    first = next(iter(modes.values()))
    lines.append(f"outcomes: {' '.join(first['results'])}; Attempts per repetition: "
                 + ", ".join(f"{m} {d['attempts_per_repetition']}" for m, d in modes.items()))
    lines.append("")
    lines.append("x engine = mode median (p90) / engine execute_attempt median (p90); paired x = median over the "
                 "same Attempt in the same round; +ms/att = median difference. Compare ratios within one run only.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=7, help="repetitions per mode (default 7)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed repetitions per mode first (default 1)")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON (samples included)")
    parser.add_argument("--profile", action="store_true",
                        help="also cProfile one in-process Attempt and print where its time goes")
    parser.add_argument("--by-event", action="store_true",
                        help="also break one run's event-log storage down by Dagster event type")
    parser.add_argument("--no-postgres", action="store_true", help="skip PostgreSQL even if AWP_TEST_PG_URL is set")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")

    pg_url = None if args.no_postgres else (os.environ.get("AWP_TEST_PG_URL", "").strip() or None)
    modes = ["engine", "sqlite"] + (["postgres"] if pg_url else [])
    with tempfile.TemporaryDirectory(prefix="awp-bench-") as tmp:
        scratch = Path(tmp)
        _isolate(scratch / "home")
        demo = Demo.create(scratch)
        for _ in range(args.warmup):  # imports, first-run caches, Dagster's schema creation paths
            for mode in modes:
                run_mode(mode, demo, scratch, pg_url)
        reps: list[Repetition] = []
        for i in range(args.repeat):
            order = modes[i % len(modes):] + modes[:i % len(modes)]  # rotate: no mode always runs first
            for mode in order:
                reps.append(run_mode(mode, demo, scratch, pg_url))
        summary = summarize(reps, args.repeat)
        if "sqlite" in summary["modes"]:
            summary["modes"]["sqlite"]["steady_store_bytes_per_attempt"] = steady_growth(demo, scratch)
        profile = profile_one_attempt(demo, scratch) if args.profile else None
        by_event = storage_by_event(demo, scratch) if args.by_event else None
    if args.json:
        if profile:
            summary["profile"] = profile
        print(json.dumps(summary, indent=2))
    else:
        print(render(summary))
        if not pg_url:
            print("postgres: skipped (set AWP_TEST_PG_URL; tests/pg.sh start DIR prints one)")
        if profile:
            print()
            print(profile)
        if by_event:
            print()
            print(by_event)
    return 0


if __name__ == "__main__":
    sys.exit(main())
