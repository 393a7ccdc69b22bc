"""Which prompts a command acts on: explicit ids, --from/--through, --phase, --remaining."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from awp_pipelines.core.decisions.agent_run import AgentRunStatus
from awp_pipelines.core.packet.errors import PacketError
from awp_pipelines.core.packet.packet import PROMPT_SUFFIX, Packet, Prompt, normalize_id


@dataclass(frozen=True)
class Selection:
    ids: tuple[str, ...] = ()
    from_id: str | None = None
    through_id: str | None = None
    phase: str | None = None
    remaining: bool = False
    completed: frozenset[str] = field(default_factory=frozenset)

    @property
    def explicit(self) -> bool:
        """The user named the prompts (ids, a range, a phase): they run as chosen, an unfinished upstream only
        warned about. --remaining alone is automatic continuation: it holds dependents, as the sensor does."""
        return bool(self.ids or self.from_id or self.through_id or self.phase)

    def apply(self, packet: Packet) -> list[Prompt]:
        prompts = packet.prompts
        known = [p.id for p in prompts]
        for wanted in (*self.ids, self.from_id, self.through_id):
            if wanted is not None and normalize_id(wanted) not in known:
                raise PacketError(packet.root, f"no prompt '{wanted}'", key="selection",
                                  hint=f"known prompts: {', '.join(known) or 'none'}")
        chosen: Sequence[Prompt] = prompts
        if self.ids:
            wanted_ids = {normalize_id(i) for i in self.ids}
            chosen = [p for p in chosen if p.id in wanted_ids]
        if self.from_id is not None:
            start = known.index(normalize_id(self.from_id))
            chosen = [p for p in chosen if known.index(p.id) >= start]
        if self.through_id is not None:
            end = known.index(normalize_id(self.through_id))
            chosen = [p for p in chosen if known.index(p.id) <= end]
        if self.phase is not None:
            chosen = [p for p in chosen if str(p.front.phase) == str(self.phase)]
        if self.remaining:
            chosen = [p for p in chosen if p.id not in self.completed]
        return list(chosen)


def selection_from_flags(ids: Iterable[str] = (), from_id: str | None = None, through_id: str | None = None,
                         phase: str | None = None, remaining: bool = False,
                         completed: Iterable[str] = ()) -> Selection:
    return Selection(tuple(ids), from_id, through_id, phase, remaining, frozenset(completed))


def unmet_upstream(packet: Packet, chosen: Sequence[str],
                   statuses: Mapping[str, AgentRunStatus]) -> dict[str, list[str]]:
    """Chosen prompt → its upstream prompts that are neither chosen too nor completed in the packet run whose
    AgentRuns are `statuses` (empty for a new packet run): a prompt runs only after its upstream."""
    unmet: dict[str, list[str]] = {}
    for pid in chosen:
        missing = [d for d in packet.dependencies(packet.prompt(pid))
                   if d not in chosen and not (d in statuses and statuses[d].done)]
        if missing:
            unmet[pid] = missing
    return unmet


def upstream_warnings(unmet: Mapping[str, list[str]], packet_run: str | None) -> list[str]:
    """An explicit selection runs what was chosen: one line per chosen prompt whose upstream is unfinished."""
    where = f"packet run {packet_run}" if packet_run else "a new packet run"
    return [f"{pid} runs as you selected it, though its upstream {', '.join(ups)} "
            f"{'is' if len(ups) == 1 else 'are'} not completed in {where}" for pid, ups in unmet.items()]


def remaining(packet: Packet, statuses: Mapping[str, AgentRunStatus]) -> frozenset[str]:
    """The prompts of the packet not done in the packet run (completed, or not needed after a `finish`)."""
    return frozenset(p.id for p in packet.prompts if not (p.id in statuses and statuses[p.id].done))


def nothing_selected(packet: Packet, selection: Selection, packet_run: str | None,
                     statuses: Mapping[str, AgentRunStatus]) -> PacketError:
    """Why a selection came out empty, and what to run instead."""
    if selection.remaining and packet_run is not None:
        return PacketError(packet.root, f"nothing remains in packet run {packet_run}: every prompt of "
                           f"{packet.name} is done there", key="selection",
                           hint=f"`awp status {packet.root}` shows it; `awp run {packet.root}` starts a new "
                           "packet run (after a reset of the work tree, for instance)")
    if not packet.prompts:
        return PacketError(packet.prompt_dir, f"packet {packet.name} has no prompts: no NN_slug{PROMPT_SUFFIX} file "
                           "in its prompt folder", key="prompt_dir",
                           hint=f"`awp prompt new {packet.root} SLUG` writes one")
    flags = [f"--phase {selection.phase}" if selection.phase else "",
             f"--from {selection.from_id}" if selection.from_id else "",
             f"--through {selection.through_id}" if selection.through_id else "",
             " ".join(selection.ids)]
    phases = sorted({str(p.front.phase) for p in packet.prompts if p.front.phase is not None})
    return PacketError(packet.root, " ".join([f"no prompt of {packet.name} matches", *(f for f in flags if f)]),
                       key="selection", hint=f"prompts: {', '.join(p.id for p in packet.prompts)}"
                       + (f"; phases: {', '.join(phases)}" if phases else ""))


def ended_explanation(chosen: Sequence[str], statuses: Mapping[str, AgentRunStatus], packet_run: str,
                      packet: Packet) -> str | None:
    """When nothing chosen can go on in the packet run (each not done has ended, or is held by its upstream):
    why, and what to run instead. None when something can run."""
    open_ = [p for p in chosen if not (p in statuses and statuses[p].done)]
    stuck = [p for p in open_ if p in statuses and (statuses[p].ended or statuses[p].held_by)]
    if not open_ or len(stuck) < len(open_):
        return None
    first = next((p for p in stuck if statuses[p].ended), stuck[0])
    return (f"nothing can run in packet run {packet_run}: " + "; ".join(f"{p} {statuses[p].text}" for p in stuck)
            + f". `awp repair {packet.root} {first} --packet-run {packet_run}` starts a repair of {first}; "
            f"`awp run {packet.root}` starts a new packet run")
