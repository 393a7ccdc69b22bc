"""What a run refuses before any Attempt starts: a prompt on an unknown provider, or on an agent CLI that is
not installed (it would fail every Attempt as launch_failed, halfway through the packet), or in a work tree that
is not there (each Attempt would fail before its agent starts)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Collection, Iterator
from pathlib import Path

from awp_pipelines.core.packet.errors import PacketError
from awp_pipelines.core.packet.packet import Packet
from awp_pipelines.core.packet.providers_config import Catalog
from awp_pipelines.core.planning.catalog_plan import login_errors
from awp_pipelines.core.planning.plan import PromptPlan, chain_uses
from awp_pipelines.core.planning.provider_checks import executable_of, install_fix, plan_needs, root_checks
from awp_pipelines.core.providers.registry import CLI_ADAPTERS, adapter_for


def refuse_unknown_providers(prompts: list[PromptPlan], catalog: Catalog, file: Path, executables: bool = True,
                             logins: bool = True) -> None:
    """Raise PacketError (exit 2) for the first prompt whose provider is unknown or cannot be built, or —
    with `executables` — whose CLI is not on PATH, or — with `logins` — that a CLI refuses as root or whose
    account is not logged in (`awp run --skip-preflight` turns both off: each Attempt then finds out)."""
    for p in prompts:
        if p.provider not in catalog.providers:
            raise PacketError(file, f"prompt {p.id} uses unknown provider '{p.provider}'", key="provider",
                              hint=f"known providers: {', '.join(catalog.providers)}; or pass --provider")
        spec = catalog.providers[p.provider]
        try:
            adapter_for(spec)
        except PacketError as err:
            raise PacketError(file, f"prompt {p.id}: {err.message}", key="provider", hint=err.hint) from None
        # A `probe: true` primary with a fallback is checked when chosen, and passed over if it is missing.
        probed = p.probe and bool(p.fallback)
        executable = executable_of(spec) if executables and spec.kind in CLI_ADAPTERS and not probed else None
        if executable and shutil.which(executable) is None:
            # A missing agent CLI would fail every Attempt as launch_failed: say so before any run starts.
            raise PacketError(file, f"prompt {p.id}: provider '{p.provider}' ({spec.kind}) runs {executable}, "
                              "which is not on PATH", key="provider",
                              hint=f"{install_fix(p.provider, spec, executable)}; `awp doctor` checks the rest")
    if not logins:
        return
    refuse_root_refusals(prompts, catalog, file)
    for refusal in login_errors(catalog, *chain_uses(prompts)):
        raise refusal  # every Attempt on it would say "not logged in": refuse before the first


def refuse_root_refusals(prompts: list[PromptPlan], catalog: Catalog, file: Path) -> None:
    """Root + a permission mode the CLI refuses as root fails every Attempt the same way: say so first."""
    refused = [c for c in root_checks(catalog, plan_needs(prompts, catalog)) if c.status == "blocking"]
    if refused:
        first = refused[0]
        raise PacketError(file, f"{first.subject}: {first.detail}", key="permission_mode", hint=first.fix)


def refuse_missing_trees(prompts: list[PromptPlan], packet: Packet) -> None:
    """Raise PacketError (exit 2) for the first work tree a selected prompt works in that is no git work tree here
    (a remote repo is cloned by the run itself): said once, before any Attempt, not by an Attempt per retry."""
    for name, key, (problem, fix) in tree_problems(packet, {r.name for p in prompts for r in p.repos}):
        raise PacketError(packet.manifest_file, f"repo '{name}': {problem}", key=".".join(map(str, key)),
                          line=packet.doc.line_of(key), hint=fix)


def tree_problems(packet: Packet, names: Collection[str] | None = None
                  ) -> Iterator[tuple[str, tuple[str | int, ...], tuple[str, str]]]:
    """(repo, the key path of its `path:`, (what is wrong, how to fix it)) for each declared repo (of `names`)
    whose work tree is no git work tree on this machine; a remote repo is cloned at run time, never one."""
    written = packet.manifest.repos
    for index, (name, repo) in enumerate(packet.repos.items()):
        problem = tree_problem(repo.path) if repo.remote is None and (names is None or name in names) else None
        if problem is not None:
            yield name, ("repos", name if isinstance(written, dict) else index, "path"), problem


def tree_problem(path: Path) -> tuple[str, str] | None:
    """(what is wrong, how to fix it) when `path` is no work tree of a git repository: absent, not a folder, or
    in no repository (no `.git` in it or above it, where git looks)."""
    if not path.exists():
        return f"no such work tree {path}", f"create it with `git init {path}`, or fix the repo's `path:`"
    if not path.is_dir():
        return f"work tree {path} is a file, not a folder", "point the repo's `path:` at a git work tree"
    if not any(os.path.lexists(folder / ".git") for folder in (path, *path.parents)):
        return f"work tree {path} is not in a git repository", f"run `git init {path}`, or fix the repo's `path:`"
    return None
