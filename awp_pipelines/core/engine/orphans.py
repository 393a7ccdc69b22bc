"""Agents a dead runner left behind.

An agent runs in a session of its own (so a terminal's Ctrl-C reaches `awp run`, which stops it in order).
The price: a `kill -9` of the runner, or of its Dagster run worker, leaves the agent running, and it goes on
writing into the work tree while the next Attempt works there. So every agent is started marked: its
environment names the packet and the work trees it was given. The mark is inherited by everything the agent
spawns and needs no registry that a kill could leave unwritten. Whoever next takes a work tree's lease ends
the processes marked with that tree: while the lease is held, no live Attempt can be working on it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from awp_pipelines.core.providers.environment import AGENT_MARK
from awp_pipelines.core.providers.process import kill_group, process_ids, process_stat

PACKET_VAR, TREES_VAR, ATTEMPT_VAR = AGENT_MARK


@dataclass(frozen=True)
class Orphan:
    pid: int
    group: int
    attempt: str


def _tree(path: str | Path) -> str:
    return str(Path(path).resolve())


def marker(packet_root: Path, trees: Iterable[str | Path], attempt_id: str) -> dict[str, str]:
    """The environment variables that mark an agent of this Attempt."""
    return {PACKET_VAR: _tree(packet_root), TREES_VAR: os.pathsep.join(sorted({_tree(t) for t in trees})),
            ATTEMPT_VAR: attempt_id}


def _environ(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:  # gone, or not ours to read
        return b""


def _parsed(raw: bytes) -> dict[str, str]:
    pairs = (item.partition(b"=") for item in raw.split(b"\0") if item)
    return {k.decode(errors="replace"): v.decode(errors="replace") for k, _, v in pairs}


def marked(packet_root: Path, trees: Iterable[str | Path]) -> Iterator[Orphan]:
    """Live processes marked as agents of this packet on any of `trees` (none where there is no /proc)."""
    packet, wanted = _tree(packet_root), {_tree(t) for t in trees}
    # Every Attempt asks, so the scan is cheap for the many processes that are not this packet's agents: their
    # environment is only searched for the mark's bytes (one read each), and only a marked one's is parsed and
    # its stat read (a scan of ~130 processes: two reads each before, ~6 ms).
    mark = f"{PACKET_VAR}={packet}".encode()
    for pid in process_ids():
        raw = _environ(pid) if pid != os.getpid() else b""
        if mark not in raw:
            continue
        env = _parsed(raw)
        if env.get(PACKET_VAR) != packet or not wanted & set(env.get(TREES_VAR, "").split(os.pathsep)):
            continue
        proc = process_stat(pid)
        if proc is not None and proc.state not in ("Z", "X"):
            yield Orphan(pid, proc.group, env.get(ATTEMPT_VAR, "?"))


def end_orphans(packet_root: Path, trees: Iterable[str | Path]) -> list[Orphan]:
    """End (SIGTERM, then SIGKILL) the process groups of the agents marked with `trees`. Call it holding the
    trees' lease only: then none of them belongs to a live Attempt. Returns what was found."""
    found = list(marked(packet_root, trees))
    for group in sorted({o.group for o in found} - {os.getpgrp()}):
        kill_group(group)
    return found
