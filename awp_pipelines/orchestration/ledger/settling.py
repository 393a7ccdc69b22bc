"""No packet run left behind: a new packet run of a packet settles every earlier one that is unfinished.

A plain `awp run PACKET` after a `kill -9` (or a crash, or an interrupted run) starts a new packet run; the
killed one would otherwise read `running (due: 02)` forever, with nothing driving it, and an Attempt that
committed before its process died would never get its record. So before the new packet run starts (under the
packet's lock, dead runners already reaped), each earlier packet run of the packet gets its committed Attempts
adopted (adoption.py), and one still unfinished is stopped by `new_packet_run`: nothing launches it (the sensor
honours stops) and every view says `stopped`, resumable with `--packet-run` or `awp resume`.

A packet run is read once per change: its run count is stored when it is settled, and it is read again only
when it has gained runs since (a resume of it).
"""

from __future__ import annotations

import time
from collections import Counter

from dagster import DagsterInstance

from awp_pipelines.core.decisions.agent_run import UNFINISHED_BY_HAND, packet_run_state
from awp_pipelines.core.decisions.stops import StopMarker
from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.dagster_compat.kvs import kv_get, kv_set
from awp_pipelines.orchestration.compile.binding import PacketBinding
from awp_pipelines.orchestration.ledger.adoption import adopt_committed
from awp_pipelines.orchestration.ledger.history import agent_run_truth, packet_run_history
from awp_pipelines.orchestration.ledger.packet_index import packet_runs_filter
from awp_pipelines.orchestration.ledger.stop_store import StopStore

_UNFINISHED = frozenset({"running", *UNFINISHED_BY_HAND})


def settle_earlier_packet_runs(instance: DagsterInstance, binding: PacketBinding, new_packet_run: str) -> list[str]:
    """Adopt the committed Attempts of every earlier packet run of the packet and stop each one left unfinished
    (it says why: `new_packet_run` started). The packet runs stopped here."""
    of_packet = packet_runs_filter(instance, binding.packet.name)
    counts = Counter(record.dagster_run.tags.get(tags.PACKET_RUN)
                     for record in (instance.get_run_records(of_packet) if of_packet else []))
    counts.pop(None, None)
    counts.pop(new_packet_run, None)
    seen = kv_get(instance, {tags.SETTLED_KEY + str(p) for p in counts})
    stops = StopStore(instance)
    stopped = []
    for packet_run, runs in counts.items():
        key = tags.SETTLED_KEY + str(packet_run)
        if seen.get(key) == str(runs):
            continue
        history = packet_run_history(instance, str(packet_run), binding.keys)
        adopt_committed(instance, binding, history)
        state, _ = packet_run_state(agent_run_truth(binding, history)[1])
        if state in _UNFINISHED and history.stopped is None:
            stops.stop(str(packet_run), StopMarker(time.time(), "new_packet_run",
                                                   f"packet run {new_packet_run} of the packet started after it"))
            stopped.append(str(packet_run))
        kv_set(instance, {key: str(runs)})
    return stopped
