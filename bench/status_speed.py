"""How fast `awp status` answers on a long history: 10,000 stored Attempts on PostgreSQL.

    .venv/bin/python bench/status_speed.py [--attempts 10000] [--per-packet-run 10] [--long 1000] [--prompts 50]

The history is synthetic but stored the way a real run stores it: one Dagster run per Attempt (tags
`awp/packet`, `awp/packet_run`, `awp/attempt`, …), and in its event log the `attempt_started` marker and
the Attempt's record (a materialization when it completed, an observation when not) with the metadata the
asset's compute writes (`record_metadata`: history table, verifier table, transcript, the record as JSON).
A generated packet of --prompts prompts takes turns; every fifth Attempt is a failed one followed by a repair.

It measures, each the median of --repeat calls on one warm instance:
  count    one SQL `SELECT count(*) FROM runs` (the baseline: the cheapest question the instance answers);
  newest   `status_report` of the packet's newest packet run (what `awp status` shows by default);
  long     `status_report --packet-run` of one packet run that holds --long Attempts (the worst case);
and prints each as milliseconds and as a ratio over `count`, measured in this one run (see bench/README.md).
Also timed once: the whole `awp status --json` command in a fresh process (Python and Dagster imports included).

PostgreSQL: AWP_TEST_PG_URL, else a throwaway server from tests/pg.sh (stopped afterwards).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import sqlalchemy as sa
import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))  # the tests' Postgres helpers: one way to make a database and a home

from e2e_support import fresh_database, postgres_instance_dir  # noqa: E402

GOAL_S = 1.0


@contextmanager
def postgres() -> Iterator[str]:
    url = os.environ.get("AWP_TEST_PG_URL", "").strip()
    if url:
        yield url
        return
    folder = tempfile.mkdtemp(prefix="awp-bench-pg.", dir="/tmp")
    url = subprocess.run(["bash", str(REPO / "tests" / "pg.sh"), "start", folder], check=True,
                         capture_output=True, text=True).stdout.strip()
    try:
        yield url
    finally:
        subprocess.run(["bash", str(REPO / "tests" / "pg.sh"), "stop", folder], capture_output=True)


def make_packet(folder: Path, prompts: int) -> Path:
    """A packet of `prompts` prompts on the simulated provider (only its asset keys matter here)."""
    (folder / "prompts").mkdir(parents=True)
    (folder / "packet.yaml").write_text(yaml.safe_dump({"name": "bench", "provider": "simulated",
                                                         "repos": {"docs": {"path": "workspace", "default": True}}}))
    for n in range(1, prompts + 1):
        front = {"id": f"{n:02d}", "verify": {"files_exist": [f"NOTES_{n}.md"]}}
        (folder / "prompts" / f"{n:02d}_write_notes_{n}.prompt.md").write_text(
            f"---\n{yaml.safe_dump(front)}---\n# Write notes {n}\n\nWrite NOTES_{n}.md.\n")
    return folder


# -- the synthetic history -----------------------------------------------------------------------------------

def _record(packet_run: str, prompt: str, number: int, mode: str, completed: bool, run_id: str):  # type: ignore[no-untyped-def]
    from awp_pipelines.core.engine.attempt_record import AttemptIdentity, AttemptRecord, AttemptTarget, Usage
    from awp_pipelines.core.records.committer import CommitResult
    from awp_pipelines.core.records.run_tags import agent_run_id, attempt_id
    from awp_pipelines.core.verifiers.report import ItemResult, VerifierReport

    agent_run = agent_run_id(packet_run, prompt)
    items = [ItemResult(kind="contains", check_name=f"notes_md_contains_line_{i}", label=f"contains: NOTES.md ({i})",
                        description=f"NOTES.md contains “line {i}”", repo="docs", path="NOTES.md",
                        passed=completed or i != 0, details=[f"found: 'line {i}'"]) for i in range(5)]
    return AttemptRecord(
        identity=AttemptIdentity(attempt_id=attempt_id(agent_run, number), agent_run=agent_run, number=number,
                                 packet="bench", packet_run=packet_run, prompt=prompt, mode=mode, dagster_run=run_id),
        target=AttemptTarget(provider="simulated", provider_kind="simulated", model="simulated-demo",
                             reason="primary target of the plan" if number == 1 else f"{mode} {number - 1}/9"),
        role="coder", prompt_name=f"Prompt {prompt}", workspace={"docs": "/tmp/workspace"}, cwd="/tmp/workspace",
        checkpoint={"docs": "0" * 40}, started_at="2026-11-30T01:00:00.000+00:00",
        ended_at="2026-11-30T01:00:04.000+00:00", duration_s=4.0,
        result="completed" if completed else "verification_failed",
        usage=Usage(input_tokens=1200, output_tokens=300, cost_usd=0.0021), messages=6,
        verifier=VerifierReport(prompt_id=prompt, items=items),
        commits=[CommitResult(repo="docs", status="committed", sha="a" * 40)] if completed else [],
        events_file=f"/tmp/bench/.awp/events/{packet_run}/{prompt}/{attempt_id(agent_run, number)}.jsonl")


def store_history(instance, packet, total: int, per_packet_run: int, long: int) -> tuple[str, str]:  # type: ignore[no-untyped-def]
    """Store `total` Attempts; the first packet run holds `long` of them, the others `per_packet_run`.
    Returns (the long packet run, the newest packet run)."""
    from dagster import AssetMaterialization, AssetObservation, DagsterEventType, DagsterRun, DagsterRunStatus
    from dagster._core.events import AssetObservationData, DagsterEvent, StepMaterializationData
    from dagster._core.events.log import EventLogEntry

    from awp_pipelines.core.engine.status_report import AttemptSummary
    from awp_pipelines.orchestration.compile.metadata import record_metadata
    from awp_pipelines.orchestration.compile.naming import job_name, prompt_key
    from awp_pipelines.orchestration.ledger.factory import ledger_of
    from awp_pipelines.orchestration.ledger.history import ATTEMPT_STARTED, marker_metadata

    prompts = [p.id for p in packet.prompts]
    job = job_name(packet)
    sizes = [long] + [per_packet_run] * ((total - long) // per_packet_run)
    sizes[-1] += total - sum(sizes)
    packet_runs = []
    transcript = "\n".join(f"**agent**: step {i} of the work, a tool call and its short result." for i in range(30))
    for index, size in enumerate(sizes):
        packet_run = f"pr-bench{index:05d}"
        packet_runs.append(packet_run)
        ledger_of(instance).note_packet_run(packet.name, packet_run, int(time.time() * 1000))  # as `awp run` does
        history: dict[str, list[AttemptSummary]] = {p: [] for p in prompts}
        events, ended = [], []
        for n in range(size):
            prompt = prompts[n % len(prompts)]
            number = len(history[prompt]) + 1
            completed = n % 5 != 1
            mode = "run" if number == 1 else "repair"
            run_id = str(uuid.uuid4())
            key = prompt_key(packet, prompt)
            tags = {"awp/packet_run": packet_run}
            instance.add_run(DagsterRun(job_name=job, run_id=run_id, status=DagsterRunStatus.STARTED, tags=tags,
                                        asset_selection=frozenset({key})))
            ended.append((run_id, DagsterEventType.RUN_SUCCESS if completed else DagsterEventType.RUN_FAILURE))
            record = _record(packet_run, prompt, number, mode, completed, run_id)
            marker = AssetObservation(asset_key=key, description=f"Attempt {number} started ({mode})",
                                      metadata=marker_metadata({
                                          "awp/event": ATTEMPT_STARTED, "awp/attempt": record.identity.attempt_id,
                                          "awp/attempt_number": number, "awp/mode": mode,
                                          "awp/provider": "simulated", "awp/model": "simulated-demo"}))
            meta = record_metadata(record, transcript, history[prompt])
            history[prompt].append(AttemptSummary.of(record))
            payloads = [(DagsterEventType.ASSET_OBSERVATION, AssetObservationData(marker))]
            if completed:
                payloads.append((DagsterEventType.ASSET_MATERIALIZATION,
                                 StepMaterializationData(AssetMaterialization(asset_key=key, metadata=meta))))
            else:
                payloads.append((DagsterEventType.ASSET_OBSERVATION,
                                 AssetObservationData(AssetObservation(asset_key=key, metadata=meta))))
            step = f"{key.path[0]}__{key.path[1]}"
            for event_type, data in payloads:
                events.append(EventLogEntry(
                    error_info=None, level=10, user_message="", run_id=run_id, timestamp=time.time(),
                    step_key=step, job_name=job, dagster_event=DagsterEvent(
                        event_type_value=event_type.value, job_name=job, step_key=step, event_specific_data=data)))
        instance.event_log_storage.store_event_batch(events)
        for run_id, status in ended:  # the run's status and end time, as its RUN_SUCCESS/RUN_FAILURE sets them
            instance.run_storage.handle_run_event(run_id, DagsterEvent(event_type_value=status.value, job_name=job),
                                                  update_timestamp=datetime.now(UTC))
    return packet_runs[0], packet_runs[-1]


# -- measuring -----------------------------------------------------------------------------------------------

def median_s(fn: Callable[[], object], repeat: int) -> float:
    fn()  # warm: connection pool, first-use caches
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=10_000)
    parser.add_argument("--per-packet-run", type=int, default=10)
    parser.add_argument("--long", type=int, default=1_000, help="Attempts in the one long packet run.")
    parser.add_argument("--prompts", type=int, default=50, help="Prompts of the generated packet.")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    from dagster import DagsterInstance
    from dagster._core.instance.ref import InstanceRef

    from awp_pipelines.core.packet.packet import load_packet
    from awp_pipelines.core.packet.providers_config import load_catalog
    from awp_pipelines.orchestration.compile.binding import PacketBinding
    from awp_pipelines.orchestration.ledger.factory import ledger_of
    from awp_pipelines.orchestration.ledger.instance import hold_connections
    from awp_pipelines.orchestration.views.status import status_report

    with postgres() as server, fresh_database(server, "awp_bench") as db, tempfile.TemporaryDirectory() as tmp:
        packet = load_packet(make_packet(Path(tmp) / "bench", args.prompts))
        home = postgres_instance_dir(Path(tmp) / "home", db)
        instance = hold_connections(DagsterInstance.from_ref(InstanceRef.from_dir(str(home))))
        started = time.perf_counter()
        long_run, newest = store_history(instance, packet, args.attempts, args.per_packet_run, args.long)
        stored_s = time.perf_counter() - started
        engine = sa.create_engine(db.set(drivername="postgresql+psycopg2"), poolclass=sa.pool.NullPool)
        with engine.connect() as conn:
            def count() -> int:
                return conn.execute(sa.text("SELECT count(*) FROM runs")).scalar_one()
            runs = count()
            count_s = median_s(count, args.repeat)
        engine.dispose()
        binding = PacketBinding.of(packet, load_catalog(None))
        newest_report = status_report(ledger_of(instance), binding)
        assert newest_report.packet_run == newest, (newest_report.packet_run, newest)
        long_report = status_report(ledger_of(instance), binding, long_run)
        assert long_report.totals.attempts == args.long, long_report.totals
        newest_s = median_s(lambda: status_report(ledger_of(instance), binding), args.repeat)
        long_s = median_s(lambda: status_report(ledger_of(instance), binding, long_run), args.repeat)
        instance.dispose()
        start = time.perf_counter()
        awp = str(Path(sys.executable).parent / "awp")
        cli = subprocess.run([awp, "status", str(packet.root), "--instance", str(home), "--json"],
                             capture_output=True, text=True)
        cli_s = time.perf_counter() - start
        assert cli.returncode == 0 and json.loads(cli.stdout)["packet_run"] == newest, cli.stderr[-2000:]

    summary = {"attempts": args.attempts, "prompts": args.prompts, "runs": runs, "stored_s": round(stored_s, 1),
               "count_ms": round(count_s * 1e3, 3),
               "newest": {"attempts": newest_report.totals.attempts, "ms": round(newest_s * 1e3, 1),
                          "ratio": round(newest_s / count_s, 1)},
               "long": {"attempts": long_report.totals.attempts, "ms": round(long_s * 1e3, 1),
                        "ratio": round(long_s / count_s, 1)},
               "cli_newest_s": round(cli_s, 2), "goal_s": GOAL_S}
    if args.json:
        print(json.dumps(summary, indent=2))
        return
    print(f"awp status over {args.attempts:,} stored Attempts ({runs:,} runs, a packet of {args.prompts} prompts) "
          f"on PostgreSQL (stored in {stored_s:.0f} s)")
    print(f"  count    SELECT count(*) FROM runs                 {count_s * 1e3:9.2f} ms   1.0x (baseline)")
    for name, report, secs in (("newest", newest_report, newest_s), ("long", long_report, long_s)):
        verdict = "under" if secs < GOAL_S else "OVER"
        print(f"  {name:8} status of a packet run of {report.totals.attempts:>5} Attempts   {secs * 1e3:9.1f} ms "
              f"{secs / count_s:7.1f}x   ({verdict} the {GOAL_S:.0f} s goal)")
    print(f"  cli      `awp status --json` in a fresh process       {cli_s:9.2f} s  (imports included)")


if __name__ == "__main__":
    main()
