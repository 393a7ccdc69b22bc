"""No packet run left behind: a new packet run of a packet settles every earlier one that is unfinished.

A plain `awp run PACKET` after a `kill -9` (or a crash, or an interrupted run) starts a new packet run; the
killed one would otherwise read `running (due: 02)` forever, with nothing driving it, and an Attempt that
committed before its process died would never get its record. So before the new packet run starts (under the
packet's lock, dead runners already reaped), each earlier packet run of the packet gets its committed Attempts
adopted (adoption.py), and one still unfinished is stopped by `new_packet_run`: nothing launches it (the sensor
honours stops) and every view says `stopped`, resumable with `--packet-run` or `awp resume`.

A packet run is read once per change: its run count is stored when it is settled, and it is read again only
when it has gained runs since (a resume of it). It runs on any ledger (`Ledger.settle` calls it with itself).
"""

from __future__ import annotations

import time

from awp_pipelines.core.decisions.agent_run import UNFINISHED_BY_HAND, packet_run_state
from awp_pipelines.core.decisions.stops import StopMarker
from awp_pipelines.orchestration.compile.binding import PacketBinding
from awp_pipelines.orchestration.ledger.history import agent_run_truth
from awp_pipelines.orchestration.ledger.ledger import Ledger

_UNFINISHED = frozenset({"running", *UNFINISHED_BY_HAND})


def settle_earlier_packet_runs(ledger: Ledger, binding: PacketBinding, new_packet_run: str) -> list[str]:
    """Adopt the committed Attempts of every earlier packet run of the packet and stop each one left unfinished
    (it says why: `new_packet_run` started). The packet runs stopped here."""
    earlier = [p for p in ledger.packet_runs(binding.packet.name) if p != new_packet_run]
    counts = ledger.run_counts(earlier)
    seen = ledger.settled(list(counts))
    stopped = []
    for packet_run, runs in counts.items():
        if seen.get(packet_run) == runs:
            continue
        history = ledger.history(packet_run, binding.keys)
        ledger.adopt(binding, history)
        state, _ = packet_run_state(agent_run_truth(binding, history)[1])
        if state in _UNFINISHED and history.stopped is None:
            ledger.stop(packet_run, StopMarker(time.time(), "new_packet_run",
                                               f"packet run {new_packet_run} of the packet started after it"))
            stopped.append(packet_run)
        ledger.mark_settled(packet_run, runs)  # last: a crash before it settles the packet run again
    return stopped
