"""The recovery sensor's cursor: one for every packet it serves.

`after` is the update time of the last ended run looked at (every packet's runs are read in one range);
per packet, the packet runs with a launch waiting for its backoff and those the user stopped (looked at again
once resumed). A packet with neither is left out, so the cursor grows with what is pending, not with packets.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field


@dataclass
class PacketCursor:
    waiting: set[str] = field(default_factory=set)  # packet runs with a launch waiting for its backoff
    stopped: set[str] = field(default_factory=set)  # packet runs the user stopped: looked at again once resumed

    def in_view(self) -> set[str]:
        return self.waiting | self.stopped


@dataclass
class RecoveryCursor:
    after: float = 0.0  # update time of the last ended run looked at
    packets: dict[str, PacketCursor] = field(default_factory=dict)  # by packet name

    @classmethod
    def parse(cls, text: str | None) -> RecoveryCursor:
        if not text:
            return cls()
        data = json.loads(text)
        packets = {name: PacketCursor(set(p.get("waiting", [])), set(p.get("stopped", [])))
                   for name, p in (data.get("packets") or {}).items()}
        return cls(float(data.get("after", 0.0)), packets)

    def dump(self) -> str:
        packets = {name: {"waiting": sorted(p.waiting), "stopped": sorted(p.stopped)}
                   for name, p in sorted(self.packets.items()) if p.in_view()}
        return json.dumps({"after": self.after, "packets": packets})
