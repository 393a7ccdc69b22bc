"""The prompts and how they relate: ids and filenames, duplicates, target repos, phases, depends_on, cycles, and
agent_control, which walks them in line."""

from __future__ import annotations

from awp_pipelines.core.packet.packet import Prompt, normalize_id

from . import contracts
from .context import LintContext
from .where import Where


def lint_agent_control(ctx: LintContext) -> None:
    """agent_control's completion contract, and that an enabled agent_control has a linear packet to walk."""
    where = Where(ctx.packet.doc, ("agent_control",))
    control = ctx.packet.manifest.agent_control
    if control.completion_verify is not None:
        contracts.lint_contract(ctx, control.completion_verify, where.at("completion_verify"))
    if not control.enabled:
        return
    if control.completion_verify is None or control.completion_verify.is_empty():
        ctx.add("invalid_agent_control", where.at("completion_verify"),
                "agent_control is enabled but completion_verify checks nothing, so any 'finish' passes",
                hint="list what must hold before the agent may finish")
    previous: str | None = None
    for prompt in ctx.packet.prompts:
        declared = prompt.declared_depends_on
        if declared is not None and declared != ([previous] if previous else []):
            ctx.add("invalid_agent_control", Where(prompt.doc, ("depends_on",)),
                    f"agent_control moves through a linear packet, but prompt {prompt.id} depends on "
                    f"{', '.join(declared) or 'nothing'}",
                    hint="drop depends_on or disable agent_control")
        previous = prompt.id


def lint_prompt(ctx: LintContext, prompt: Prompt) -> None:
    """A prompt's id against its filename and the other prompts, and the repos, prompts and phase it names."""
    where = Where(prompt.doc, ())
    _id_and_filename(ctx, prompt, where)
    _duplicate_id(ctx, prompt, where)
    for index, name in enumerate(prompt.front.targets or []):
        if name not in ctx.packet.repos:
            ctx.add("unknown_target_repo", where.at("targets", index), f"target repo '{name}' is not declared",
                    hint=ctx.known_repos())
    _unknown_depends_on(ctx, prompt, where.at("depends_on"))
    phases = ctx.packet.manifest.phases
    phase = prompt.front.phase
    if phases and phase is not None and str(phase) not in phases:
        ctx.add("unknown_phase", where.at("phase"), f"phase '{phase}' is not in the manifest's phases",
                hint=f"known phases: {', '.join(phases)}")


def lint_cycles(ctx: LintContext) -> None:
    """Each dependency cycle once, at the depends_on of the first prompt on it."""
    graph = {p.id: ctx.packet.dependencies(p) for p in ctx.packet.prompts}
    if len(graph) < len(ctx.packet.prompts):
        return  # duplicate ids make every graph wrong; duplicate_prompt_id says so
    reported: set[frozenset[str]] = set()
    for prompt in ctx.packet.prompts:
        cycle = _cycle_through(graph, prompt.id)
        if cycle and frozenset(cycle) not in reported:
            reported.add(frozenset(cycle))
            ctx.add("dependency_cycle", Where(prompt.doc, ("depends_on",)),
                    "prompts depend on each other: " + " → ".join([*cycle, cycle[0]]),
                    hint="a prompt may only depend on prompts that do not depend on it")


def _id_and_filename(ctx: LintContext, prompt: Prompt, where: Where) -> None:
    front = prompt.front
    if prompt.filename_id is None:
        ctx.add("prompt_filename_without_prefix", prompt.file,
                f"'{prompt.file.name}' has no number prefix, so it runs after every numbered prompt",
                hint="rename it NN_slug.prompt.md")
    elif front.id is not None and normalize_id(front.id) != prompt.filename_id:
        ctx.add("prompt_id_filename_mismatch", where.at("id"),
                f"id '{front.id}' differs from the filename's '{prompt.filename_id}'",
                hint=f"set id: \"{prompt.filename_id}\" or rename the file")


def _duplicate_id(ctx: LintContext, prompt: Prompt, where: Where) -> None:
    first = next(p for p in ctx.packet.prompts if p.id == prompt.id)
    if first is not prompt:
        ctx.add("duplicate_prompt_id", where.at("id") if prompt.front.id is not None else prompt.file,
                f"prompt id {prompt.id} is also used by {first.file.name}",
                hint="give each prompt its own id")


def _unknown_depends_on(ctx: LintContext, prompt: Prompt, where: Where) -> None:
    ids = {p.id for p in ctx.packet.prompts}
    for dep in prompt.declared_depends_on or []:
        if dep not in ids:
            ctx.add("unknown_depends_on", where, f"depends on prompt '{dep}', which the packet does not have",
                    hint=f"known prompts: {', '.join(sorted(ids))}")


def _cycle_through(graph: dict[str, list[str]], start: str) -> list[str] | None:
    """A path start → … that leads back to start, when there is one."""
    stack, visited = [(start, [start])], {start}
    while stack:
        node, path = stack.pop()
        for nxt in graph.get(node, []):
            if nxt == start:
                return path
            if nxt not in visited:
                visited.add(nxt)
                stack.append((nxt, [*path, nxt]))
    return None
