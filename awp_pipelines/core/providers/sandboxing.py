"""What an agent's sandbox grants, from its request: the provider side of the grants (isolation/grants.py).

The Attempt hands over its own places (work trees, the control folder, what to mask); this adds what the
CLI needs: its private HOME, a scoped copy of its account's config folder (or of the CLI's own login folder
when no account is set), its program and install read-only, and the `awp` shim with the Python that runs it
read-only, so `awp agent-control` works from inside. Nothing else of the operator's HOME is granted.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from awp_pipelines.core.isolation.bwrap import SYSTEM_RO
from awp_pipelines.core.isolation.grants import GrantMode, Grants, PathGrant
from awp_pipelines.core.isolation.scoped_config import scoped_config
from awp_pipelines.core.packet.install import PACKAGE_DIR
from awp_pipelines.core.providers.base import ProviderRequest
from awp_pipelines.core.providers.cli import CliAdapter
from awp_pipelines.core.providers.environment import LOGIN_DIRS


def _system(path: str) -> bool:
    return any(path == root or path.startswith(root + "/") for root in SYSTEM_RO)


def _shebang(path: str) -> str | None:
    """The interpreter a script names by its path on its first line (`#!/opt/venv/bin/python`). One found on
    PATH (`#!/usr/bin/env python3`) is looked up inside, where PATH finds the system's: nothing to grant."""
    try:
        with open(path, "rb") as fh:
            first = fh.readline(512)
    except OSError:
        return None
    words = first[2:].decode("utf-8", "replace").split() if first.startswith(b"#!") else []
    if not words or os.path.basename(words[0]) == "env":
        return None
    return words[0]


# What marks a folder as more than a program's install: a packet, an instance, AWP's state.
_NOT_AN_INSTALL = ("packet.yaml", ".awp", "prompts", "resources")


def _install_of(path: str) -> str:
    """What of a program file must be visible for it to run: the outermost `node_modules` holding it (an npm
    install needs its dependencies), the virtual environment it sits in (`pyvenv.cfg` beside its `bin/`), else
    its folder (a script may import its neighbours) unless that folder is more than an install: the operator's
    HOME or a folder above it, or one holding a packet or AWP's state (`/bin/sh ~/agent.sh`, a script at a
    packet's root): then the file alone."""
    parts = Path(path).parts
    if "node_modules" in parts:
        return str(Path(*parts[:parts.index("node_modules") + 1]))
    folder = Path(path).parent
    if folder.name == "bin" and (folder.parent / "pyvenv.cfg").is_file():
        return str(folder.parent)
    home = Path(os.path.expanduser("~")).resolve()
    if home == folder.resolve() or home.is_relative_to(folder.resolve()) or \
            any((folder / name).exists() for name in _NOT_AN_INSTALL):
        return path
    return str(folder)


def install_grants(words: Iterable[str], path_env: str | None) -> list[PathGrant]:
    """The agent's program, read-only, as narrow as it runs: the executable (found on PATH) and each absolute
    file among its arguments (`/bin/sh ~/agent.sh`, `python3 /opt/agent/run.py`), each as the path written and
    as its real path, with the interpreter its first line names by path; for each, its install (_install_of).
    The system's folders are already there; a folder argument is never granted (it is not a program)."""
    words = list(words)
    found = shutil.which(words[0], path=path_env) if words else None
    candidates = [found, *words[1:]]
    files: list[str] = []
    for word in filter(None, candidates):
        if not (os.path.isabs(word) and os.path.isfile(word)):
            continue
        for path in dict.fromkeys((os.path.abspath(word), os.path.realpath(word))):
            files.append(path)
            interpreter = _shebang(path)
            if interpreter and os.path.isabs(interpreter) and os.path.isfile(interpreter):
                files += [interpreter, os.path.realpath(interpreter)]
    grants = []
    for place in dict.fromkeys(_install_of(path) for path in files):
        if not _system(place):
            grants.append(PathGrant(path=place, mode="ro", why="the agent's install"))
    return grants


def runtime_grants(tools: Path | None) -> list[PathGrant]:
    """The `awp` shim's folder and the interpreter and package it runs, read-only."""
    if tools is None:
        return []
    places = (sys.base_prefix, sys.prefix, str(PACKAGE_DIR), str(tools))
    return [PathGrant(path=p, mode="ro", why="awp agent-control") for p in dict.fromkeys(places) if not _system(p)]


def config_grants(adapter: CliAdapter, request: ProviderRequest, env: Mapping[str, str],
                  scratch: Path) -> list[PathGrant]:
    """The account's own config folder; without an account, the CLI's own login folder (never HOME itself):
    each as a scoped copy under `scratch` (isolation/scoped_config.py), discarded after the session, so nothing
    the agent writes there (a hook in settings.json) reaches a later session. The credential files are the
    original's: read-write for a named account, read-only for the operator's own login."""
    operator_home = os.path.expanduser("~")
    folders: list[tuple[str, GrantMode, str]] = []
    if request.account is not None:
        if request.account.config_dir:
            folders.append((request.account.config_dir, "rw", f"account {request.account.name}'s config"))
    else:
        variable = adapter.spec.config_dir_env
        if variable and env.get(variable) and os.path.realpath(env[variable]) != os.path.realpath(operator_home):
            folders.append((env[variable], "ro", "the CLI's config folder"))
        if adapter.kind in LOGIN_DIRS and LOGIN_DIRS[adapter.kind][0] in env:
            marker = LOGIN_DIRS[adapter.kind][2].replace("~", operator_home, 1)
            folders.append((marker, "ro", "the CLI's own login"))
    grants: list[PathGrant] = []
    for n, (folder, credential_mode, why) in enumerate(dict.fromkeys(folders)):
        grants += scoped_config(Path(os.path.abspath(folder)), scratch / f"config-{n}", kind=adapter.kind,
                                credential_mode=credential_mode, why=why)
    return grants


def agent_grants(adapter: CliAdapter, request: ProviderRequest, attempt: Iterable[PathGrant], *,
                 scratch: Path) -> Grants:
    """Every grant of the agent's sandbox: its HOME, config, install and runtime, then the Attempt's own.
    `scratch`: the Attempt's own folder outside the sandbox, where the config folders' scoped copies go."""
    env = adapter.env(request)
    home = env.get("HOME") or os.path.expanduser("~")
    # A scoped HOME is the agent's own; the operator's (no scoped one) is replaced by an empty private one.
    paths = [PathGrant(path=home, mode="rw" if request.home is not None else "tmpfs", why="private HOME"),
             *config_grants(adapter, request, env, scratch),
             *install_grants(shlex.split(adapter.command), env.get("PATH")),
             *runtime_grants(request.tools), *attempt]
    return Grants(paths=paths, env_names=sorted(env))
