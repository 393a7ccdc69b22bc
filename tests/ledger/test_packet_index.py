"""The packet's packet runs, listed in the instance's key-value store (runs carry only their packet-run tag)."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

from dagster import DagsterRun, DagsterRunStatus
from repo_paths import REPO_ROOT

from awp_pipelines.dagster_compat.kvs import kv_prefixed
from awp_pipelines.orchestration.ledger.factory import ledger_of
from awp_pipelines.orchestration.ledger.instance import open_instance_folder


def test_a_packet_lists_its_packet_runs_newest_first_and_their_runs_only(tmp_path: Path) -> None:
    instance = open_instance_folder(tmp_path / "home")
    ledger = ledger_of(instance)
    try:
        runs = {}
        for packet, packet_run in (("demo", "pr-old"), ("demo_x", "pr-other"), ("demo", "pr-new")):
            ledger_of(instance).note_packet_run(packet, packet_run, int(time.time() * 1000))
            run = DagsterRun(job_name=f"packet__{packet}", run_id=str(uuid.uuid4()),
                             status=DagsterRunStatus.SUCCESS, tags={"awp/packet_run": packet_run})
            instance.add_run(run)
            runs[packet_run] = run.run_id
            time.sleep(0.01)  # the note's time orders them
        # A run joined the older one again (a resume): it is newest.
        ledger.note_packet_run("demo", "pr-old", int(time.time() * 1000))
        assert ledger.packet_runs("demo") == ["pr-old", "pr-new"]
        # `demo_x` is another packet, though `_` is a LIKE wildcard and `demo` its prefix.
        assert ledger.packet_runs("demo_x") == ["pr-other"] and ledger.packet_runs("nothing") == []
        assert {r.run_id for r in ledger_of(instance).runs_of_packet("demo")} == {runs["pr-old"], runs["pr-new"]}
        assert ledger_of(instance).runs_of_packet("demo", [DagsterRunStatus.STARTED]) == []
        assert ledger_of(instance).runs_of_packet("nothing") == []
    finally:
        instance.dispose()


def test_reading_a_packets_runs_writes_nothing(tmp_path: Path) -> None:
    """`awp status` and every other reader only read: runs that carry no indexed packet run stay unlisted and
    the key-value table is left as it was (no migration on read)."""
    instance = open_instance_folder(tmp_path / "home")
    try:
        instance.add_run(DagsterRun(job_name="packet__demo", run_id=str(uuid.uuid4()),
                                    tags={"awp/packet": "demo", "awp/packet_run": "pr-old"}))
        before = kv_prefixed(instance, "awp/")
        assert ledger_of(instance).packet_runs("demo") == [] and ledger_of(instance).runs_of_packet("demo") == []
        assert kv_prefixed(instance, "awp/") == before
    finally:
        instance.dispose()


def test_a_run_whose_tag_row_was_stored_twice_is_read_once(tmp_path: Path) -> None:
    """On dagster 1.12's SQLite a run came back twice from a packet-run filter (its tag row stored twice): the
    daemon test took the same run for the packet run's first and second run."""
    import sqlalchemy as sa
    from dagster._core.storage.runs.schema import RunTagsTable

    from awp_pipelines.core.packet.packet import load_packet
    from awp_pipelines.core.packet.providers_config import load_catalog
    from awp_pipelines.orchestration.assets import packet_assets

    instance = open_instance_folder(tmp_path / "home")
    try:
        run = DagsterRun(job_name="packet__demo", run_id=str(uuid.uuid4()), status=DagsterRunStatus.SUCCESS,
                         tags={"awp/packet_run": "pr-twice"})
        instance.add_run(run)
        ledger_of(instance).note_packet_run("demo", "pr-twice", int(time.time() * 1000))
        with instance.run_storage.connect() as conn:  # type: ignore[attr-defined]
            conn.execute(sa.insert(RunTagsTable).values(run_id=run.run_id, key="awp/packet_run", value="pr-twice"))
        assert len(instance.get_runs()) == 1
        assert [r.run_id for r in ledger_of(instance).runs_of_packet("demo")] == [run.run_id]
        keys = packet_assets(load_packet(REPO_ROOT / "assets" / "demo"),
                             load_catalog(None)).binding.keys
        assert [r.run_id for r in ledger_of(instance).history("pr-twice", keys).runs] == [run.run_id]
    finally:
        instance.dispose()
