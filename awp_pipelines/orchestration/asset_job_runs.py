"""Runs of a job Dagster makes itself (`__ASSET_JOB`: "Materialize all" on the lineage page, the asset pages, the
launchpad) carry none of a packet job's tags: their first compute adds `awp/packet` and `awp/packet_run`
(compute/launch_choice.py). A run that ended before it (its worker lost, killed while queued or starting, a
step process or the code load crashing first) would stay outside every packet run: no sensor recovers it, no
status shows it. The recovery sensor recognises such a run by its asset selection and gives it the tags
its compute would have added, so it is an ended run of its packet run like any other (its prompts that never
started are still planned), and every reader by tag (status, watch, the next compute) sees it.
"""

from __future__ import annotations

from collections.abc import Sequence

from dagster import DagsterInstance, DagsterRun

from awp_pipelines.core.packet.ids import check_id
from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.dagster_compat.tags import WORKER_LOSS_ONLY
from awp_pipelines.orchestration.binding import PacketBinding
from awp_pipelines.orchestration.history import prompts_of_run


def own_packet_run(run: DagsterRun) -> str:
    """The packet run a run starts when it joins none: named after the run."""
    return f"pr-{run.run_id[:8]}"


def joining_tags(run: DagsterRun, binding: PacketBinding, packet_run: str) -> dict[str, str]:
    """The packet-level tags that make `run` a run of `packet_run` (a run of several prompts lists them)."""
    wanted = {tags.PACKET: binding.packet.name, tags.PACKET_RUN: packet_run}
    if tags.PACKET not in run.tags:
        # A run of a job Dagster made has none of the packet job's tags: Dagster's run retries must leave its
        # Attempts' failures to AWP too.
        wanted.update(WORKER_LOSS_ONLY)
    held = prompts_of_run(run, binding.keys)
    if len(held) > 1:
        wanted[tags.PROMPTS] = tags.short(",".join(sorted(held)))
    return wanted


def claimant(run: DagsterRun, bindings: Sequence[PacketBinding]) -> PacketBinding | None:
    """The packet an ended run without a packet tag joins: the first of `bindings` whose prompts its asset
    selection holds (a selection across packets joins the first). None for a packet job's run (it carries the
    tag from its job) or a run of no served packet's prompts (no selection: not one of Dagster's asset jobs)."""
    if tags.PACKET in run.tags or not run.asset_selection:
        return None
    return next((b for b in bindings if any(key in b.keys for key in run.asset_selection)), None)


def claim_ended_run(instance: DagsterInstance, run: DagsterRun, binding: PacketBinding) -> DagsterRun:
    """An ended run `claimant` gave to `binding`, tagged as its compute would have tagged it; as stored when
    another code location's sensor claimed it first or its packet-run tag is not a valid id (the compute
    refuses it too)."""
    stored = instance.get_run_by_id(run.run_id) or run  # fresh: the tick's read may predate another's claim
    packet_run = stored.tags.get(tags.PACKET_RUN) or own_packet_run(stored)
    try:
        check_id(packet_run, "packet run id")
    except ValueError:
        return stored
    if tags.PACKET in stored.tags:
        return stored
    instance.add_run_tags(run.run_id, joining_tags(stored, binding, packet_run))
    return instance.get_run_by_id(run.run_id) or stored
