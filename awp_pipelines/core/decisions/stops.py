"""A user's stop of a packet run, as a decision: pure, no Dagster.

Ctrl-C or SIGTERM to `awp run`, or a run cancelled in the UI, stores a `StopMarker` on the packet run
(the ledger keeps it: `Ledger.stop`). While it stands, the recovery sensor launches nothing for
that packet run; the user's next launch of it (`awp run --packet-run`, `awp resume`, a UI launch carrying the
packet run) resumes it and lifts the marker. A stop older than the last resume is history, not a stop: the
sensor may see a run cancelled before the resume only after it.
"""

from __future__ import annotations

import json
import signal
from dataclasses import dataclass
from typing import Literal

# `new_packet_run`: a new packet run of the same packet started while this one was unfinished and driven by
# nothing (its `awp run` died, or it was interrupted): it is settled, not left reading `running` (ledger/adoption.py).
StoppedBy = Literal["SIGINT", "SIGTERM", "ui_cancel", "new_packet_run"]


@dataclass(frozen=True)
class StopMarker:
    """Who stopped the packet run, when (epoch seconds), and why (one line, no secret)."""

    at: float
    by: StoppedBy
    reason: str

    @classmethod
    def from_signal(cls, signum: int, at: float, reason: str) -> StopMarker:
        return cls(at, "SIGTERM" if signum == signal.SIGTERM else "SIGINT", reason)

    def line(self) -> str:
        return f"stopped by {self.by}: {self.reason}" if self.reason else f"stopped by {self.by}"


@dataclass(frozen=True)
class StopState:
    """What the instance holds for one packet run: the standing stop, if any, and when it was last resumed."""

    marker: StopMarker | None = None
    resumed_at: float = 0.0

    @property
    def stopped(self) -> bool:
        return self.marker is not None

    def stop(self, marker: StopMarker) -> StopState:
        """The marker stands unless a resume came after it; the first stop of a stretch is kept (it is the
        user's act; a cancel the sensor sees later is its echo)."""
        if marker.at <= self.resumed_at or self.marker is not None:
            return self
        return StopState(marker, self.resumed_at)

    def resume(self, at: float) -> StopState:
        return StopState(None, max(at, self.resumed_at))

    def dump(self) -> str:
        marker = None if self.marker is None else {"at": self.marker.at, "by": self.marker.by,
                                                   "reason": self.marker.reason}
        return json.dumps({"marker": marker, "resumed_at": self.resumed_at})

    @classmethod
    def parse(cls, text: str | None) -> StopState:
        """Unreadable text (a hand edit, a newer format) reads as no stop: a stop must never wedge a run."""
        try:
            data = json.loads(text) if text else {}
            raw = data.get("marker")
            marker = StopMarker(float(raw["at"]), raw["by"], str(raw.get("reason", ""))) if raw else None
            return cls(marker, float(data.get("resumed_at", 0.0)))
        except (ValueError, TypeError, KeyError, AttributeError):
            return cls()
