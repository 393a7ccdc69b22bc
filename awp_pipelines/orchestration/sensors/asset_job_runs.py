"""Runs of a job Dagster makes itself (`__ASSET_JOB`: "Materialize all" on the lineage page, the asset pages, the
launchpad) carry none of a packet job's tags: their first compute adds `awp/packet_run`
(compute/launch_choice.py). A run that ended before it (its worker lost, killed while queued or starting, a
step process or the code load crashing first) would stay outside every packet run: no sensor recovers it, no
status shows it. The recovery sensor recognises such a run by its asset selection (here) and has the ledger give
it the tags its compute would have added (`Ledger.claim_run`), so it is an ended run of its packet run like any
other (its prompts that never started are still planned), and every reader by tag (status, watch, the next
compute) sees it.
"""

from __future__ import annotations

from collections.abc import Sequence

from dagster import DagsterRun

from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.orchestration.compile.binding import PacketBinding


def of_packet(run: DagsterRun, binding: PacketBinding, job: str) -> bool:
    """A run of the packet's job, or of one of Dagster's asset jobs that selected prompts of the packet."""
    return run.job_name == job or any(key in binding.keys for key in run.asset_selection or ())


def unclaimed(run: DagsterRun, binding: PacketBinding) -> bool:
    """A run without a packet-run tag whose asset selection holds prompts of this packet (no selection: not one
    of Dagster's asset jobs; a launcher tags a packet job's runs)."""
    return tags.PACKET_RUN not in run.tags and any(key in binding.keys for key in run.asset_selection or ())


def claimant(run: DagsterRun, bindings: Sequence[PacketBinding]) -> PacketBinding | None:
    """The packet an ended run without a packet-run tag joins: the first of `bindings` whose prompts its asset
    selection holds (a selection across packets joins the first). None for a run that carries one (a packet
    job's run, one claimed already) or a run of no served packet's prompts."""
    return next((b for b in bindings if unclaimed(run, b)), None)
