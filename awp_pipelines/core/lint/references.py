"""References from one part of a packet to another (a prompt's `depends_on`, `targets`, `phase`, a verify entry's
repo, a template, a repo's work tree): lint reports them, and `awp plan` and `awp run` say the same, one line each,
instead of a KeyError halfway through compiling the job or an Attempt on a tree that is not there."""

from __future__ import annotations

from awp_pipelines.core.packet.errors import PacketError
from awp_pipelines.core.packet.packet import Packet
from awp_pipelines.core.packet.providers_config import Catalog
from awp_pipelines.core.planning.plan import PacketPlan
from awp_pipelines.core.planning.preflight import tree_problems

from . import prompts
from .context import LintContext
from .report import Finding, LintReport
from .where import Where

# Broken references a run cannot go on with: the job does not compile (an unknown or circular depends_on), or
# the prompt would run somewhere it does not say (an unknown repo is dropped from `targets`) or against a
# phase or a repo that is not declared. `awp plan` and `awp run` refuse them as lint reports them.
REFUSED: frozenset[str] = frozenset({"unknown_depends_on", "dependency_cycle", "duplicate_prompt_id",
                                     "unknown_target_repo", "unknown_verify_repo", "unknown_phase"})
# What `awp plan` and `awp run` say as a warning, as lint does: a template only `awp prompt new` reads, and a
# work tree missing on this machine (made before the run, e.g. by a setup script; `awp run` refuses it if it is
# still missing then: preflight.refuse_missing_trees).
SAID: frozenset[str] = frozenset({"missing_template", "missing_work_tree"})


def lint_work_trees(ctx: LintContext) -> None:
    """Each declared repo (not a remote one, cloned at run time) whose work tree is not a git work tree here."""
    for name, key, (problem, fix) in tree_problems(ctx.packet):
        ctx.add("missing_work_tree", Where(ctx.packet.doc, key), f"repo '{name}': {problem}", hint=fix)


def refuse_broken_graph(packet: Packet, catalog: Catalog, plan: PacketPlan) -> None:
    """The references a packet's job is compiled from (depends_on, ids, targets, phases), checked alone: cheap enough
    for a code location of hundreds of packets, which then fails with the packet's file and line, as `awp run`
    refuses it, not with a KeyError."""
    ctx = LintContext(packet, catalog, plan)
    for prompt in packet.prompts:
        prompts.lint_prompt(ctx, prompt)
    prompts.lint_cycles(ctx)
    refuse_broken_references(LintReport(packet=packet.name, findings=ctx.findings))


def refuse_broken_references(report: LintReport) -> list[str]:
    """Raise PacketError (exit 2) at the first broken reference a run cannot go on with; return the lines to say
    as warnings (`SAID`). `report`: lint's findings of the loaded packet."""
    for found in report.findings:
        if found.kind in REFUSED:
            raise as_error(found)
    return [_said(found) for found in report.findings if found.kind in SAID]


def as_error(found: Finding) -> PacketError:
    hint = "; ".join(part for part in (found.hint, "`awp lint` lists every finding") if part)
    return PacketError(found.file, found.message, key=found.key, line=found.line, hint=hint)


def _said(found: Finding) -> str:
    where = found.file + (f":{found.line}" if found.line else "")
    return f"{where}: {found.message}" + (f" ({found.hint})" if found.hint else "")
