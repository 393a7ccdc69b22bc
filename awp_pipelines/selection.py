"""Which prompts a command acts on: explicit ids, --from/--through, --phase, --remaining."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from awp_pipelines.errors import PacketError
from awp_pipelines.packet import Packet, Prompt, normalize_id


@dataclass(frozen=True)
class Selection:
    ids: tuple[str, ...] = ()
    from_id: str | None = None
    through_id: str | None = None
    phase: str | None = None
    remaining: bool = False
    completed: frozenset[str] = field(default_factory=frozenset)

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
