"""Bubblewrap: the grants as a `bwrap` command line, and whether bwrap can start here.

Namespaces are bubblewrap's, not ours: a new user namespace (the operator, root in CI, is uid 1000
inside, so a CLI that refuses to bypass permissions as root accepts it), new pid, ipc, uts, cgroup and
network namespaces (no network unless the egress module hands one in), a fresh /proc that shows only the
sandbox's processes, a minimal /dev, a private /tmp, and a root filesystem built from an allow-list: the
system's folders read-only, a few files of /etc, then the grants. bwrap is started with the agent's
environment only (never the runner's), because with a new pid namespace bwrap is pid 1 inside, and its
/proc/1/environ is whatever it was started with; no variable is put on its command line, which `ps`
outside would show.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from awp_pipelines.core.isolation.grants import Grants
from awp_pipelines.core.records.process_env import allowed_env

SANDBOX_UID = 1000  # the agent's user inside: never root
SANDBOX_HOSTNAME = "awp-sandbox"
SYSTEM_RO = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# Of /etc, only what programs need to run: no shadow, no ssh keys, no system gitconfig (credential helpers).
ETC_RO = ("/etc/alternatives", "/etc/ssl", "/etc/ca-certificates", "/etc/ca-certificates.conf", "/etc/pki",
          "/etc/crypto-policies", "/etc/hosts", "/etc/resolv.conf", "/etc/nsswitch.conf", "/etc/host.conf",
          "/etc/localtime", "/etc/timezone", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
          "/etc/os-release", "/etc/debian_version", "/etc/mime.types", "/etc/magic", "/etc/bash.bashrc",
          "/etc/profile", "/etc/inputrc", "/etc/terminfo", "/etc/protocols", "/etc/services")
INSTALL_HINT = ("install bubblewrap (Debian/Ubuntu: `apt-get install -y bubblewrap`; Fedora: `dnf install "
                "bubblewrap`; Arch: `pacman -S bubblewrap`)")
OPT_OUT_HINT = ("or, to run the agent unsandboxed beside everything the runner can read, set `isolation: none` on "
                "the provider or account (resources/providers.yaml) or in the packet")


BWRAP_VAR = "AWP_BWRAP"  # the operator's bwrap, where it is not the one on PATH


def bwrap_path() -> str | None:
    chosen = os.environ.get(BWRAP_VAR)
    if chosen:
        return chosen if os.access(chosen, os.X_OK) else None
    return shutil.which("bwrap")


@functools.cache
def bwrap_version() -> str | None:
    """`bubblewrap 0.8.0` → `0.8.0`; None without bwrap."""
    exe = bwrap_path()
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=10, check=False,
                             env=allowed_env())
    except OSError:
        return None
    return out.stdout.strip().removeprefix("bubblewrap").strip() or None


@functools.cache
def unavailable() -> str | None:
    """Why the sandbox cannot start here, naming the fix; None when it can. Asked once per process."""
    if not sys.platform.startswith("linux"):
        return (f"the sandbox needs Linux (bubblewrap); this is {sys.platform}: run AWP on Linux (a VM or a "
                f"container with user namespaces), {OPT_OUT_HINT}")
    exe = bwrap_path()
    if exe is None:
        where = f"${BWRAP_VAR} ({os.environ[BWRAP_VAR]}) is not executable" if os.environ.get(BWRAP_VAR) else \
            "bubblewrap (bwrap) is not on PATH"
        return f"{where}: {INSTALL_HINT}, {OPT_OUT_HINT}"
    probe = [exe, "--unshare-all", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID), "--die-with-parent",
             *_system_binds(), "--proc", "/proc", "--dev", "/dev", "--", "true"]
    try:
        done = subprocess.run(probe, capture_output=True, text=True, timeout=20, check=False,
                              env=allowed_env(source={}))
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"bubblewrap could not start: {err}; {OPT_OUT_HINT}"
    if done.returncode != 0:
        return (f"bubblewrap cannot create its namespaces here ({done.stderr.strip()[-300:] or done.returncode}): "
                "enable unprivileged user namespaces (`sysctl -w kernel.unprivileged_userns_clone=1`, "
                "`sysctl -w user.max_user_namespaces=15000`; AppArmor: `sysctl -w "
                "kernel.apparmor_restrict_unprivileged_userns=0`), or in Docker run the container with "
                f"`--security-opt seccomp=unconfined --security-opt apparmor=unconfined`; {OPT_OUT_HINT}")
    return None


def _system_binds() -> list[str]:
    """The system's folders read-only; a top-level symlink (/bin → usr/bin) stays a symlink."""
    args: list[str] = []
    for path in SYSTEM_RO:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    return args


IDENTITY = Path(__file__).resolve().parent / "etc"


def _identity_files() -> tuple[str, str]:
    """An /etc/passwd and /etc/group naming only the sandbox's user (tools ask who they are; the operator's
    accounts are none of their business): files of this package, so no sandbox leaves a temporary folder."""
    return str(IDENTITY / "passwd"), str(IDENTITY / "group")


def bwrap_argv(grants: Grants, command: Sequence[str], *, cwd: Path, network_args: Sequence[str] = ()) -> list[str]:
    """`bwrap … -- command`: the namespaces, the system read-only, then each grant in order."""
    exe = bwrap_path() or "bwrap"
    passwd, group = _identity_files()
    args = [exe, "--unshare-all", "--die-with-parent", "--new-session",
            "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID), "--hostname", SANDBOX_HOSTNAME,
            *_system_binds()]
    for path in ETC_RO:
        args += ["--ro-bind-try", path, path]
    args += ["--ro-bind", passwd, "/etc/passwd", "--ro-bind", group, "/etc/group",
             "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    for grant in grants.ordered():
        source = grant.source or grant.path
        if grant.mode == "ro":
            args += ["--ro-bind-try", source, grant.path]
        elif grant.mode == "rw":
            args += ["--bind-try", source, grant.path]
        elif grant.mode == "tmpfs" or os.path.isdir(grant.path):
            args += ["--tmpfs", grant.path]
        elif os.path.exists(grant.path):  # a hidden file: an empty one over it
            args += ["--ro-bind", "/dev/null", grant.path]
    # The network's arguments last: its socket folder under /run must not be hidden by a later mount.
    return [*args, *network_args, "--chdir", str(cwd), "--", *command]
