"""The daemon benchmarks' deployment: packets in one project served by `dagster-webserver` and `dagster-daemon`
on the embedded SQLite instance (tests/daemon/deployment.py), each job launched as "Materialize all" launches it,
and the packet's runs read back from the instance once they have all ended."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent / "tests"
sys.path[:0] = [str(TESTS), str(TESTS / "daemon")]
from dagster import DagsterInstance, RunRecord  # noqa: E402
from deployment import FINISHED, Deployment, deployment, embedded_home, make_project  # noqa: E402

from awp_pipelines.orchestration.ledger.instance_ledger import InstanceLedger  # noqa: E402


@contextmanager
def served(folder: Path, sources: dict[str, Path]) -> Iterator[Deployment]:
    """The packets (name → folder) in one project, under a real webserver and daemon until the block ends."""
    project = make_project(folder / "project", sources)
    with deployment(embedded_home(folder / "home"), project) as dep:
        yield dep


def packet_runs(instance: DagsterInstance, packet: str) -> list[RunRecord]:
    """The packet's runs, oldest first: the UI's launch, then what the recovery sensor launched."""
    of_packet = InstanceLedger(instance).runs_filter(packet)
    records = instance.get_run_records(of_packet) if of_packet else []
    return sorted(records, key=lambda r: r.create_timestamp)


def launch_and_settle(dep: Deployment, packet: str, runs: int = 1, timeout_s: float = 600) -> list[RunRecord]:
    """Launch the packet's job; wait until it has `runs` runs, all ended; return them, oldest first."""
    dep.launch_job(f"packet__{packet}")

    def settled(instance: DagsterInstance) -> bool:
        found = packet_runs(instance, packet)
        return len(found) >= runs and all(r.dagster_run.status in FINISHED for r in found)

    dep.wait_until(settled, timeout_s, f"{runs} run(s) of packet {packet}")
    with dep.instance() as instance:
        return packet_runs(instance, packet)
