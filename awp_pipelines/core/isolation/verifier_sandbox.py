"""The verifier's sandbox: a contract's command runs the agent's code with no more rights than the agent had.

`make test` or `python -m pytest` runs the agent's Makefile or conftest.py. So every command of a contract
(`commands`, with its `regenerates`, and `awp verify`) runs in bubblewrap (bwrap.py, the agent's own
layer): the repositories read-write, as the agent had them (a check writes caches and regenerated files
there; a copy would cost a tree's size per command and its writes would be lost); the packet folder
read-only; AWP's state inside any of them (`.awp/`, the state folder, DAGSTER_HOME) hidden; each tree's
git metadata wholly read-only (its `.git`, a worktree's git dir and common dir), as in the agent's sandbox: a
check can stage nothing, write no MERGE_HEAD and move no branch; the program and the runner's Python
read-only; the system's folders read-only; a private /tmp, which is also HOME. Nothing else of the host:
not the operator's HOME, not the host's /proc (a fresh one shows only the check's processes), not other
accounts. Its environment is PATH, HOME, TMPDIR and LANG, then the contract's `env`: never the runner's.
No network unless the contract's `network` asks (the egress of egress.py, as the agent's). bwrap gives
it a fresh pid namespace, `--die-with-parent` and `--new-session`: when the check's command exits (or
the runner is killed), every process it started ends with it.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from awp_pipelines.core.isolation.bwrap import SYSTEM_RO, bwrap_argv, unavailable
from awp_pipelines.core.isolation.egress import start_egress
from awp_pipelines.core.isolation.grants import Grants, PathGrant, git_metadata_grants
from awp_pipelines.core.isolation.network_setting import policy

INSIDE_HOME = "/tmp"  # the sandbox's own /tmp (a tmpfs): HOME is private and empty
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
STATE_NAMES = (".awp",)  # AWP's state folder inside a packet or a tree


class VerifierSandboxUnavailable(Exception):
    """bubblewrap cannot start here; the message names the fix (bwrap.unavailable)."""


@dataclass(frozen=True)
class VerifierPlaces:
    """What a contract's command may reach: its repositories (read-write), the packet (read-only), and the
    state to hide wherever it falls inside them."""

    trees: tuple[Path, ...]
    packet_root: Path
    state: tuple[Path, ...] = ()

    def grants(self, program: str) -> Grants:
        trees = [Path(os.path.abspath(t)) for t in self.trees]
        packet = Path(os.path.abspath(self.packet_root))
        paths = [PathGrant(path=str(packet), mode="ro", why="the packet"),
                 *(PathGrant(path=str(t), mode="rw", why="work tree") for t in trees),
                 *(g for g in _program_grants(program)  # a program in a tree is there already
                   if not any(Path(g.path).is_relative_to(root) for root in (packet, *trees)))]
        state = [*(p / name for p in (packet, *trees) for name in STATE_NAMES), *self.state]
        if os.environ.get("DAGSTER_HOME"):
            state.append(Path(os.environ["DAGSTER_HOME"]))
        for place in state:
            path = Path(os.path.abspath(place))
            if any(path.is_relative_to(root) and path != root for root in (packet, *trees)):
                paths.append(PathGrant(path=str(path), mode="hidden", why="AWP's state"))
        paths += [grant for t in trees for grant in git_metadata_grants(t)]
        return Grants(paths=paths)


def _system(path: str) -> bool:
    return any(path == root or path.startswith(root + "/") for root in SYSTEM_RO)


def _program_grants(program: str) -> list[PathGrant]:
    """The program file (and what its link points at), the virtualenv it sits in, and the runner's Python
    (which the agent's sandbox grants too, for `awp agent-control`), read-only; never the program's folder."""
    places = [_virtualenv(path) or path for path in dict.fromkeys((os.path.abspath(program),
                                                                   os.path.realpath(program)))]
    places += [sys.prefix, sys.base_prefix]
    return [PathGrant(path=p, mode="ro", why="the check's program") for p in dict.fromkeys(places) if not _system(p)]


def _virtualenv(program: str) -> str | None:
    """The virtualenv whose bin folder holds `program` (`.venv/bin/python`), if it is in one."""
    venv = Path(program).parent.parent
    return str(venv) if (venv / "pyvenv.cfg").is_file() else None


def verifier_env(program: str, contract_env: Mapping[str, str]) -> dict[str, str]:
    """PATH (the virtualenv's bin folder of a program in one, then the system's), a private HOME and TMPDIR,
    LANG; then the contract's `env`. Never a folder of the tree: a script there would shadow `env` or `ls`."""
    path = f"{os.path.dirname(program)}:{SYSTEM_PATH}" if _virtualenv(program) else SYSTEM_PATH
    base = {"PATH": path, "HOME": INSIDE_HOME, "TMPDIR": INSIDE_HOME, "LANG": os.environ.get("LANG", "C.UTF-8")}
    return {**base, **contract_env}


@dataclass(frozen=True)
class Wrapped:
    argv: list[str]
    env: dict[str, str]
    grants: Grants


@contextmanager
def verifier_sandbox(places: VerifierPlaces, argv: Sequence[str], cwd: Path, contract_env: Mapping[str, str],
                     network: list[str] | None = None) -> Iterator[Wrapped]:
    """`argv` (its program an absolute path) as the sandbox's command line and environment; the network's
    egress, if the contract asks for one, runs until the block ends. Raises VerifierSandboxUnavailable."""
    why_not = unavailable()
    if why_not is not None:
        raise VerifierSandboxUnavailable(f"the verifier's sandbox cannot start: {why_not}")
    grants = places.grants(argv[0])
    env = verifier_env(argv[0], contract_env)
    if not network or network == ["none"]:
        yield Wrapped(bwrap_argv(grants, argv, cwd=cwd), env, grants)
        return
    folder = Path(tempfile.mkdtemp(prefix="awp-verifier-net-"))
    try:
        with start_egress(policy(network), folder, kind="command", base_url=None) as egress:
            inside = egress.wrap_command(list(argv))
            yield Wrapped(bwrap_argv(grants, inside, cwd=cwd, network_args=egress.bwrap_args()),
                          {**env, **egress.env()}, grants.model_copy(update={"hosts": egress.granted_hosts}))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
