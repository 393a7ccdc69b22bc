"""Provisioning an Attempt's agent: its execution profile, and the sandbox it will run in.

Runs in the Attempt's `provisioning` state, before the agent starts. Unless `isolation: none` is written,
an agent process runs in a bubblewrap sandbox granted the Attempt's work trees (read-only under a `plan`
the provider cannot enforce), its control folder, and what the CLI needs (providers/sandboxing.py). The
instance's state inside a granted tree (the state folder, `.awp/`, DAGSTER_HOME) is masked, and the trees'
git metadata (`.git` whole, a worktree's git dir) is read-only: AWP runs git on it outside the sandbox
afterwards. Where the sandbox cannot start, provisioning fails with the fix: it never falls back to running
unsandboxed.
"""

from __future__ import annotations

import os
import platform
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from awp_pipelines.core.isolation import cgroup
from awp_pipelines.core.isolation.bwrap import bwrap_version, unavailable
from awp_pipelines.core.isolation.egress import EgressHandle, start_egress
from awp_pipelines.core.isolation.grants import GrantMode, PathGrant, git_metadata_grants
from awp_pipelines.core.isolation.leftovers import hold, release, sweep
from awp_pipelines.core.isolation.limits import DEFAULT_LIMITS, resolved
from awp_pipelines.core.isolation.network_policy import NetworkPolicy
from awp_pipelines.core.isolation.network_setting import policy
from awp_pipelines.core.isolation.profile import ExecutionProfile, resolve_profile
from awp_pipelines.core.isolation.record import IsolationRecord
from awp_pipelines.core.isolation.sandbox import Sandbox
from awp_pipelines.core.isolation.scoped_config import changed_names, discard
from awp_pipelines.core.isolation.trusted_files import packet_file_grants, trusted_in
from awp_pipelines.core.packet.providers_config import AccountBinding, ProviderSpec
from awp_pipelines.core.providers.base import ProviderAdapter, ProviderRequest
from awp_pipelines.core.providers.cli import CliAdapter
from awp_pipelines.core.providers.enforcement import sandbox_enforces_plan
from awp_pipelines.core.providers.environment import ENDPOINT_ENV
from awp_pipelines.core.providers.sandboxing import agent_grants
from awp_pipelines.core.records.events import EventSink
from awp_pipelines.core.records.failures import FailureEnvelope


@dataclass(frozen=True)
class Provisioned:
    record: IsolationRecord
    sandbox: Sandbox | None
    egress: EgressHandle | None = None
    kind: str = ""
    folder: Path | None = None  # the Attempt's sandbox folder outside (sockets, scoped copies)
    temporary: bool = False  # a temporary folder (no state folder): removed whole at close
    lock: int | None = None  # held while the Attempt lives (leftovers.py)

    def close(self, sink: EventSink | None = None) -> None:
        """The agent's session is over: its way out closes, and each connection it refused becomes an event of
        the Attempt (`network_denied`: method, host, port, why, count; never a header or path); each scoped copy
        of a config folder is removed, what the agent wrote in it reported (`config_discarded`)."""
        if self.egress is not None:
            self.egress.close()
            if sink is not None:
                for denial in self.egress.denials():
                    sink.emit("network_denied", asdict(denial))
        for grant in self.record.grants.paths if self.record.grants else ():
            if grant.source is None:
                continue
            changed = changed_names(Path(grant.path), Path(grant.source), kind=self.kind)
            if changed and sink is not None:
                sink.emit("config_discarded", {"folder": grant.path, "changed": changed[:50]})
            discard(Path(grant.source))
        if self.sandbox is not None and self.sandbox.cgroup is not None:
            cgroup.remove(self.sandbox.cgroup)  # whatever the sandbox left running goes with it
        if self.lock is not None:
            release(self.lock)
        if self.folder is not None and self.temporary:
            shutil.rmtree(self.folder, ignore_errors=True)


def network_policy(packet: list[str] | None, account: AccountBinding | None, spec: ProviderSpec) -> NetworkPolicy:
    """The packet's `network`, else the account's, else the provider's, else `provider`."""
    return policy(next((n for n in (packet, account.network if account else None, spec.network) if n), None))


def endpoint(adapter: CliAdapter, request: ProviderRequest, env: Mapping[str, str]) -> str | None:
    """The base_url the agent talks to: the account's or provider's, else the one its environment names."""
    configured = (request.account.base_url if request.account else None) or adapter.spec.base_url
    names = ENDPOINT_ENV.get(adapter.kind, ())
    return configured or next((env[n] for n in names if env.get(n)), None)


def execution_profile(kind: str, adapter: ProviderAdapter, packet_isolation: str | None,
                      account: AccountBinding | None) -> ExecutionProfile:
    """An adapter that starts no process of its own (simulated, openai_http, a test's stand-in) runs in AWP's."""
    cli = adapter if isinstance(adapter, CliAdapter) else None
    return resolve_profile(kind if cli is not None else "simulated",
                           packet=packet_isolation if packet_isolation in ("sandbox", "none") else None,  # type: ignore[arg-type]
                           account=(account.name, account.isolation) if account else None,
                           provider=(cli.name if cli else kind, cli.spec.isolation if cli else None))


def _masks(trees: Mapping[str, Path], state_root: Path | None, packet_root: Path) -> list[PathGrant]:
    """What of AWP's state, the packets' files, the instances' config and git's hooks sits inside a granted
    tree: masked, or read-only (isolation/trusted_files.py)."""
    state = [p for p in (state_root, packet_root / ".awp", os.environ.get("DAGSTER_HOME")) if p]
    grants = []
    for tree in trees.values():
        for place in (*state, tree / ".awp"):
            path = Path(os.path.abspath(place))
            if path.is_relative_to(tree) and path != tree:
                grants.append(PathGrant(path=str(path), mode="hidden", why="AWP's state"))
        if Path(os.path.abspath(packet_root)).is_relative_to(tree):
            grants += packet_file_grants(Path(os.path.abspath(packet_root)))
        grants += trusted_in(tree)
        grants += git_metadata_grants(tree)
    return grants


def unstartable(profile: ExecutionProfile) -> FailureEnvelope | None:
    """The sandbox the profile asks for cannot start here: a deterministic failure naming the fix."""
    why_not = unavailable() if profile.isolation == "sandbox" else None
    if why_not is None:
        return None
    return FailureEnvelope.for_class("launch_failed", f"the agent's sandbox cannot start: {why_not}",
                                     provider_code="sandbox_unavailable", deterministic=True)


def provision(profile: ExecutionProfile, adapter: ProviderAdapter, request: ProviderRequest, *, kind: str,
              trees: Mapping[str, Path], control: Path | None, state_root: Path | None,
              packet_root: Path, network: list[str] | None, attempt_id: str) -> Provisioned:
    """The sandbox of an Attempt whose profile is `sandbox` (checked startable by `unstartable`)."""
    node = platform.node()
    if profile.isolation != "sandbox" or not isinstance(adapter, CliAdapter):
        return Provisioned(IsolationRecord(profile=profile, node=node), None)
    mode: GrantMode = "ro" if sandbox_enforces_plan(kind, request.permission_mode, True) else "rw"
    trees = {n: Path(os.path.abspath(p)) for n, p in trees.items()}
    own = [PathGrant(path=str(p), mode=mode, why=f"work tree {n}" + (" (plan)" if mode == "ro" else ""))
           for n, p in trees.items()]
    cwd = Path(os.path.abspath(request.cwd))
    if not any(cwd.is_relative_to(p) for p in trees.values()):
        own.insert(0, PathGrant(path=str(cwd), mode="ro", why="working directory"))
    if control is not None:
        own.append(PathGrant(path=str(control), mode="rw", why="agent control"))
    if state_root is not None:
        sweep(state_root / "sandbox")  # what a killed runner's Attempts left
    folder = sandbox_folder(state_root, attempt_id)
    lock = hold(folder)
    grants = agent_grants(adapter, request, [*own, *_masks({**trees, "": cwd}, state_root, packet_root)],
                          scratch=folder)
    policy = network_policy(network, request.account, adapter.spec)
    base_url = endpoint(adapter, request, adapter.env(request))
    egress = start_egress(policy, folder, kind=kind, base_url=base_url)
    grants = grants.model_copy(update={"hosts": egress.granted_hosts})
    limits = resolved(adapter.spec.limits)
    group = cgroup.make(f"{os.getpid()}-{attempt_id}", limits.processes or DEFAULT_LIMITS.processes or 4096)
    sandbox = Sandbox(grants=grants, network_args=tuple(egress.bwrap_args()), network_env=egress.env(),
                      inner=egress.wrap_command, limits=limits, cgroup=group)
    record = IsolationRecord(profile=profile, grants=grants, node=node, sandbox=f"bubblewrap {bwrap_version()}",
                             limits=limits, process_cap=f"pids cgroup {group}" if group else "rlimit only")
    return Provisioned(record, sandbox, egress, kind, folder, state_root is None, lock)


def sandbox_folder(state_root: Path | None, attempt_id: str) -> Path:
    """Where an Attempt's sandbox keeps its files outside (the egress's sockets): under the state folder,
    else a private temporary folder."""
    if state_root is None:
        return Path(tempfile.mkdtemp(prefix="awp-sandbox-"))
    folder = state_root / "sandbox" / attempt_id
    folder.mkdir(parents=True, exist_ok=True)
    return folder
