"""What an Attempt finds on its work trees before it edits them, its tree's lease held: agents a dead runner
left working (orphans), the unrecorded work of Attempts that died (saved as checkpoints), a remote clone's
branch, and the checkpoints a continuing AgentRun restores."""

from __future__ import annotations

from pathlib import Path

from dagster import Failure

from awp_pipelines.core.engine.attempt_record import AttemptRecord
from awp_pipelines.core.engine.orphans import end_orphans
from awp_pipelines.core.engine.remote import RemoteTrees
from awp_pipelines.core.planning.plan import PromptPlan, WorkRepo
from awp_pipelines.core.records.workspace import WorkspaceError, latest_checkpoint
from awp_pipelines.orchestration.compile.binding import PacketBinding
from awp_pipelines.orchestration.compute.interrupted_work import save_unrecorded_work
from awp_pipelines.orchestration.compute.step import Step
from awp_pipelines.orchestration.ledger.history import PacketRunHistory


def clear_dead_work(step: Step, binding: PacketBinding, history: PacketRunHistory, prompt_id: str,
                    trees: RemoteTrees | None) -> None:
    """Before an Attempt counts as started: what dead ones left on its trees is dealt with, then a remote
    clone is brought to the packet run's branch."""
    repos = binding.plans[prompt_id].repos
    _end_orphans(step, binding.packet.root, repos)
    _save_dead_work(step, binding, history, prompt_id)
    _sync_trees(step, trees, repos)


def _end_orphans(step: Step, packet_root: Path, repos: list[WorkRepo]) -> None:
    """Agents a killed runner left working in these trees (orphans.py): ended before this Attempt starts."""
    for orphan in end_orphans(packet_root, [r.path for r in repos]):
        step.log.warning(f"ended agent process {orphan.pid} (group {orphan.group}) of Attempt {orphan.attempt}: "
                            "its runner died and it was still working in this tree")


def _save_dead_work(step: Step, binding: PacketBinding, history: PacketRunHistory, prompt_id: str) -> None:
    """Holding the work tree's lease, no live Attempt is on it: an Attempt on these trees that started and has
    no record died (a killed run worker, under the daemon). Its partial work becomes its AgentRun's checkpoint
    before this Attempt edits the tree, as the next `awp run` does for a dead runner (in_process.py)."""
    for attempt in save_unrecorded_work(binding, history, history.packet_run, binding.sharing_pool(prompt_id)):
        step.log.warning(f"saved the partial work of Attempt {attempt}, whose process died, as its checkpoint")


def _sync_trees(step: Step, trees: RemoteTrees | None, repos: list[WorkRepo]) -> None:
    """Remote repos (remote.py): this worker's clone stands on the packet run's branch, checkpoints fetched."""
    if trees is None:
        return
    try:
        tips = trees.sync(Path(r.path) for r in repos)
    except WorkspaceError as err:
        raise Failure(description=f"could not bring the work tree to the packet run's branch: {err}") from None
    for name, sha in tips.items():
        step.log.info(f"repo {name}: on {trees.branch} at {sha[:12]}")


def checkpoints_to_restore(plan: PromptPlan, agent_run: str, last: AttemptRecord | None) -> dict[str, str]:
    """The AgentRun's newest checkpoint per repo: the last record's partial work, or that of a later
    Attempt whose process died before its record (the reaper saved it)."""
    since = last.identity.number if last else 1
    found = {}
    for repo in plan.repos:
        try:
            sha = latest_checkpoint(repo.path, agent_run, since)
        except WorkspaceError:
            continue
        if sha:
            found[repo.name] = sha
    return found
