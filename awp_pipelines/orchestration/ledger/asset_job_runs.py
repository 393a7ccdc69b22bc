"""Runs of a job Dagster makes itself (`__ASSET_JOB`: "Materialize all" on the lineage page, the asset pages, the
launchpad) carry none of a packet job's tags: their first compute adds `awp/packet_run`
(compute/launch_choice.py). A run that ended before it (its worker lost, killed while queued or starting, a
step process or the code load crashing first) would stay outside every packet run: no sensor recovers it, no
status shows it. The recovery sensor recognises such a run by its asset selection and gives it the tags
its compute would have added, so it is an ended run of its packet run like any other (its prompts that never
started are still planned), and every reader by tag (status, watch, the next compute) sees it.
"""

from __future__ import annotations

from collections.abc import Sequence

from dagster import DagsterInstance, DagsterRun

from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.dagster_compat.tags import WORKER_LOSS_ONLY
from awp_pipelines.orchestration.compile.binding import PacketBinding
from awp_pipelines.orchestration.ledger.packet_index import note_packet_run


def own_packet_run(run: DagsterRun) -> str:
    """The packet run a run starts when it joins none: named after the run."""
    return f"pr-{run.run_id[:8]}"


def of_packet(run: DagsterRun, binding: PacketBinding, job: str) -> bool:
    """A run of the packet's job, or of one of Dagster's asset jobs that selected prompts of the packet."""
    return run.job_name == job or any(key in binding.keys for key in run.asset_selection or ())


def joining_tags(packet_run: str) -> dict[str, str]:
    """The tags that make a run a run of `packet_run`: a run of a job Dagster made has none of the packet
    job's tags, and Dagster's run retries must leave its Attempts' failures to AWP too."""
    return {tags.PACKET_RUN: packet_run, **WORKER_LOSS_ONLY}


def unclaimed(run: DagsterRun, binding: PacketBinding) -> bool:
    """A run without a packet-run tag whose asset selection holds prompts of this packet (no selection: not one
    of Dagster's asset jobs; a launcher tags a packet job's runs)."""
    return tags.PACKET_RUN not in run.tags and any(key in binding.keys for key in run.asset_selection or ())


def claimant(run: DagsterRun, bindings: Sequence[PacketBinding]) -> PacketBinding | None:
    """The packet an ended run without a packet-run tag joins: the first of `bindings` whose prompts its asset
    selection holds (a selection across packets joins the first). None for a run that carries one (a packet
    job's run, one claimed already) or a run of no served packet's prompts."""
    return next((b for b in bindings if unclaimed(run, b)), None)


def join(instance: DagsterInstance, run: DagsterRun, packet: str, packet_run: str) -> None:
    """`Ledger.join_run`: the packet run noted in the packet's index, then the joining tags `run` lacks."""
    note_packet_run(instance, packet, packet_run)
    missing = {k: v for k, v in joining_tags(packet_run).items() if run.tags.get(k) != v}
    if missing:
        instance.add_run_tags(run.run_id, missing)


def claim_ended_run(instance: DagsterInstance, run_id: str, packet: str) -> DagsterRun | None:
    """`Ledger.claim_run`: an ended `unclaimed` run, tagged as its compute would have tagged it; as stored when
    another packet's sensor claimed it first (a selection across packets joins the first packet that looks) or
    its packet-run tag is not a valid id (the compute refuses it too)."""
    stored = instance.get_run_by_id(run_id)  # fresh: the read a sensor tick shares may predate a claim
    if stored is None or tags.PACKET_RUN in stored.tags:
        return stored
    join(instance, stored, packet, own_packet_run(stored))
    return instance.get_run_by_id(run_id) or stored
