"""What the ledger's tests store: an Attempt's record, the runner of an `awp run` killed with kill -9, and a
packet bound to assets (on a real git work tree)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import yaml

from awp_pipelines.core.engine.attempt_record import AttemptIdentity, AttemptRecord, AttemptTarget
from awp_pipelines.core.engine.hosts import host_id
from awp_pipelines.core.engine.runlock import process_start_time
from awp_pipelines.core.packet.packet import load_packet
from awp_pipelines.core.packet.providers_config import BUILTIN, Catalog
from awp_pipelines.core.records.failures import FailureEnvelope
from awp_pipelines.orchestration.assets import CompiledPacket, packet_assets
from awp_pipelines.orchestration.compile.binding import PacketBinding
from awp_pipelines.orchestration.compute.resources import AwpResource


def a_packet(root: Path, make_git_repo: Callable[[Path], Path], prompts: dict[str, dict],
             catalog: Catalog = BUILTIN, **manifest: object) -> CompiledPacket:
    """Packet `mem`: prompts (each `NN_slug` → front matter) on one work tree, `root/workspace`, compiled with its
    state (events, control files) under `root/.awp`."""
    make_git_repo(root / "workspace")
    (root / "packet.yaml").write_text(yaml.safe_dump({"name": "mem", "provider": "simulated", "repos": {
        "app": {"path": "./workspace", "default": True}}, **manifest}))
    (root / "prompts").mkdir()
    for name, front in prompts.items():
        (root / "prompts" / f"{name}.prompt.md").write_text(f"---\n{yaml.safe_dump(front)}---\nWork.\n")
    return packet_assets(load_packet(root), catalog, AwpResource())


def a_binding(root: Path, make_git_repo: Callable[[Path], Path], prompts: dict[str, dict],
              catalog: Catalog = BUILTIN, **manifest: object) -> PacketBinding:
    """`a_packet`'s binding: the independent prompts' packet bound to its assets."""
    return a_packet(root, make_git_repo, prompts, catalog, **manifest).binding


def dead_runner() -> str:
    """A process that lived and was killed (kill -9): host:pid:start time, as `awp run` notes itself."""
    proc = subprocess.Popen(["sleep", "30"])
    start = process_start_time(proc.pid)
    proc.kill()
    proc.wait()
    return f"{host_id()}:{proc.pid}:{start}"


def a_record(packet_run: str, number: int, result: str, run_id: str, prompt: str = "01", account: str = "acct",
             failure_class: str = "provider_runtime_claim", ended_at: str = "2026-11-30T00:00:02+00:00"
             ) -> AttemptRecord:
    failure = FailureEnvelope.for_class(failure_class, "it failed") if result == "provider_failed" else None
    return AttemptRecord(
        identity=AttemptIdentity(attempt_id=f"{packet_run}.{prompt}.a{number}", agent_run=f"{packet_run}.{prompt}",
                                 number=number, packet="p", packet_run=packet_run, prompt=prompt,
                                 mode="run" if number == 1 else "retry", dagster_run=run_id),
        target=AttemptTarget(provider="simulated", provider_kind="simulated", account=account, model="m",
                             reason="why"),
        role="coder", prompt_name="P", workspace={}, cwd=".", checkpoint={}, started_at="2026-11-30T00:00:00+00:00",
        ended_at=ended_at, duration_s=2.0, result=result, failure=failure)  # type: ignore[arg-type]
