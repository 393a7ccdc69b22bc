"""What a run refuses before any Attempt starts: a prompt on an unknown provider, or on an agent CLI that is
not installed (it would fail every Attempt as launch_failed, halfway through the packet)."""

from __future__ import annotations

import shutil
from pathlib import Path

from awp_pipelines.core.packet.errors import PacketError
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
