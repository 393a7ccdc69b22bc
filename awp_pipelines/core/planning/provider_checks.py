"""`awp doctor`: can this machine run the packet's agents? No Dagster here (storage is checked by the CLI).

Checks each provider the packet may use (primary and fallback): the CLI is on PATH and answers
`--version`; each account's credential variable is set (its value is never read out); config dirs are
writable or creatable; HTTP providers have an endpoint. Each problem names its fix. A problem on a provider
the packet needs blocks it; one on a provider it only falls back to is a warning. Doctor only looks: it writes
nothing, and a CLI asked for its version gets a throwaway HOME, so whatever it writes on start is not the user's.
That CLI gets no credential either (only the basics of its environment: a `command` agent may print whatever
it holds), and every detail is redacted of each account's credential value before it is shown.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import requests

from awp_pipelines.core.decisions.rotation import Cooldown
from awp_pipelines.core.isolation.bwrap import unavailable
from awp_pipelines.core.isolation.profile import ExecutionProfile, resolve_profile
from awp_pipelines.core.packet.providers_config import AccountBinding, Catalog, ProviderSpec
from awp_pipelines.core.providers.environment import bare_env
from awp_pipelines.core.providers.registry import CLI_ADAPTERS
from awp_pipelines.core.providers.sandbox import expected_env, root_refusal
from awp_pipelines.core.records.redact import Redactor

if TYPE_CHECKING:
    from awp_pipelines.core.planning.plan import PromptPlan

Status = Literal["ok", "warning", "blocking"]
VERSION_TIMEOUT_S = 30
INSTALL_HINT = {
    "claude_code": "npm install -g @anthropic-ai/claude-code",
    "codex": "npm install -g @openai/codex",
    "opencode": "npm install -g opencode-ai",
    "gemini": "npm install -g @google/gemini-cli",
    "amp": "npm install -g @sourcegraph/amp",
}


@dataclass(frozen=True)
class Check:
    subject: str
    what: str
    status: Status
    detail: str
    fix: str = ""


@dataclass(frozen=True)
class Need:
    """A provider the packet may use, with its accounts; `required` when it is a primary target."""

    provider: str
    accounts: tuple[str, ...] = ()
    required: bool = True
    permission_mode: str | None = None  # what the packet asks of the agent (root refuses some)
    isolation: str | None = None  # the packet's `isolation`, over the provider's and account's


def plan_needs(prompts: Iterable[PromptPlan], catalog: Catalog) -> list[Need]:
    """What the planned prompts need: each primary target (required), each fallback (not)."""
    needs: list[Need] = []
    for prompt in prompts:
        needs.append(Need(prompt.provider, tuple(catalog.accounts_of(prompt.accounts, prompt.provider)),
                          permission_mode=prompt.permission_mode, isolation=prompt.isolation))
        needs += [Need(t.provider, tuple(t.accounts or ()), required=False, permission_mode=prompt.permission_mode,
                       isolation=prompt.isolation) for t in prompt.fallback]
    return needs


def _problem(required: bool) -> Status:
    return "blocking" if required else "warning"


def executable_of(spec: ProviderSpec) -> str | None:
    """The program a CLI kind runs (the first word of `command`, else the kind's usual name)."""
    command = spec.command or (CLI_ADAPTERS[spec.kind].default_command if spec.kind in CLI_ADAPTERS else "")
    return command.split()[0] if command.strip() else None


def install_fix(name: str, spec: ProviderSpec, executable: str) -> str:
    return INSTALL_HINT.get(spec.kind, f"install {executable}") + f", or set `command` for provider {name}"


def check_cli(name: str, spec: ProviderSpec, required: bool, timeout_s: float = VERSION_TIMEOUT_S) -> Check:
    executable = executable_of(spec)
    if not executable:
        return Check(name, "cli", _problem(required), "no command configured",
                     f"set `command` for provider {name} in resources/providers.yaml")
    path = shutil.which(executable)
    if path is None:
        return Check(name, "cli", _problem(required), f"{executable} not found on PATH",
                     install_fix(name, spec, executable))
    try:
        with tempfile.TemporaryDirectory(prefix="awp-doctor-") as home:
            env = {**bare_env(os.environ), "HOME": home, **{f"XDG_{k}_HOME": os.path.join(home, k.lower())
                                                  for k in ("CONFIG", "DATA", "STATE", "CACHE")}}
            done = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=timeout_s,
                                  stdin=subprocess.DEVNULL, env=env)
    except (OSError, subprocess.TimeoutExpired) as err:
        return Check(name, "cli", _problem(required), f"{path} --version failed: {err}",
                     f"reinstall {executable}")
    version = (done.stdout or done.stderr).strip().splitlines()[:1]
    if done.returncode != 0:
        return Check(name, "cli", _problem(required), f"{path} --version exited {done.returncode}",
                     f"reinstall {executable}")
    return Check(name, "cli", "ok", f"{path} {version[0] if version else ''}".strip())


def check_credential(subject: str, variable: str | None, required: bool, login_dir: str | None = None) -> Check:
    """Only whether the variable is set: the value is never read into the report."""
    if not variable:
        return Check(subject, "credential", "ok", "no credential variable configured")
    if os.environ.get(variable):
        return Check(subject, "credential", "ok", f"${variable} is set")
    if login_dir and Path(login_dir).is_dir() and any(Path(login_dir).iterdir()):
        return Check(subject, "credential", "ok", f"${variable} unset; a CLI login may live in {login_dir}")
    return Check(subject, "credential", _problem(required), f"${variable} is not set",
                 f"export {variable}=… (or log the CLI in)")


def check_dir(subject: str, folder: str) -> Check:
    """Writable, or creatable where it is missing: checked without writing anything (doctor only looks)."""
    path = Path(folder).expanduser()
    if path.exists():
        if not path.is_dir():
            return Check(subject, "config dir", "blocking", f"{path} is not a folder", f"move {path} aside")
        if not os.access(path, os.W_OK | os.X_OK):
            return Check(subject, "config dir", "blocking", f"{path} is not writable", f"chmod u+w {path}")
        return Check(subject, "config dir", "ok", f"{path} writable")
    parent = next((p for p in path.parents if p.exists()), None)
    if parent is None or not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        return Check(subject, "config dir", "blocking", f"{path} is missing and {parent} is not writable",
                     f"create {path} or change config_dir")
    return Check(subject, "config dir", "ok", f"{path} missing; the first Attempt creates it (in {parent})")


def check_models(name: str, spec: ProviderSpec, account: AccountBinding | None, timeout_s: float) -> Check:
    """An OpenAI-compatible endpoint answers a GET of its models list with the credential (bounded in time):
    reachable, and the key accepted. The key goes in the header only, never into the report."""
    base = (account.base_url if account else None) or spec.base_url
    if not base:
        return Check(name, "endpoint", "blocking", "no base_url", f"set base_url for provider {name}")
    url = base.rstrip("/") + "/models"
    variable = account.credential_env if account else spec.credential_env
    key = os.environ.get(variable) if variable else None
    try:
        response = requests.get(url, headers={"Authorization": f"Bearer {key}"} if key else {}, timeout=timeout_s)
    except requests.RequestException as err:
        return Check(name, "endpoint", "blocking", f"GET {url}: {type(err).__name__}", "check the endpoint and network")
    if response.ok:
        return Check(name, "endpoint", "ok", f"GET {url}: {response.status_code}")
    return Check(name, "endpoint", "blocking", f"GET {url}: {response.status_code}",
                 "check the credential" if response.status_code in (401, 403) else "try again later")


def need_profile(catalog: Catalog, need: Need, account: str | None) -> ExecutionProfile | None:
    """The execution profile the agent of `need` with `account` will run under (None: unknown provider)."""
    spec = catalog.providers.get(need.provider)
    if spec is None:
        return None
    binding = catalog.binding(account)
    isolation = need.isolation if need.isolation in ("sandbox", "none") else None
    return resolve_profile(spec.kind, packet=isolation, account=(account, binding.isolation) if binding else None,  # type: ignore[arg-type]
                           provider=(need.provider, spec.isolation))


def _subjects(catalog: Catalog, need: Need) -> list[str | None]:
    return [*catalog.accounts_of(list(need.accounts), need.provider)] or [None]


def root_checks(catalog: Catalog, needs: list[Need], euid: int | None = None) -> list[Check]:
    """Root + a permission mode the CLI refuses as root (sandbox.py), per provider and account: what to do.
    Only for `isolation: none`: in the sandbox the agent is never root."""
    checks: dict[str, Check] = {}
    for need in needs:
        spec = catalog.providers.get(need.provider)
        for account in _subjects(catalog, need):
            profile = need_profile(catalog, need, account)
            if profile is not None and profile.isolation == "sandbox":
                continue
            found = spec and root_refusal(spec.kind, need.permission_mode,
                                          expected_env(spec, catalog.binding(account)), provider=need.provider,
                                          account=account, euid=euid)
            subject = f"{need.provider}:{account}" if account else need.provider
            if found and (subject not in checks or need.required):
                checks[subject] = Check(subject, "root", _problem(need.required), found.detail, found.fix)
    return list(checks.values())


def diagnose(catalog: Catalog, needs: list[Need], timeout_s: float = VERSION_TIMEOUT_S,
             online: bool = False) -> list[Check]:
    """`online`: also ask each HTTP endpoint for its models list with each account's key (network)."""
    checks: list[Check] = []
    seen: set[tuple[str, str]] = set()
    for need in needs:
        spec = catalog.providers.get(need.provider)
        if spec is None:
            checks.append(Check(need.provider, "provider", _problem(need.required), "unknown provider",
                                "declare it in resources/providers.yaml"))
            continue
        if spec.kind == "simulated" or ("provider", need.provider) in seen:
            continue
        seen.add(("provider", need.provider))
        if spec.kind == "openai_http":
            has_url = spec.base_url or any((catalog.accounts.get(a) and catalog.accounts[a].base_url)
                                           for a in need.accounts)
            if online and has_url:
                bindings: list[AccountBinding | None] = [
                    b for b in (catalog.binding(a) for a in need.accounts) if b is not None]
                for binding in bindings or [None]:
                    checked = check_models(need.provider if binding is None else f"{need.provider}:{binding.name}",
                                           spec, binding, timeout_s)
                    checks.append(checked if checked.status == "ok" else replace(
                        checked, status=_problem(need.required)))
            else:
                checks.append(Check(need.provider, "endpoint", "ok" if has_url else _problem(need.required),
                                    spec.base_url or "per account" if has_url else "no base_url",
                                    "" if has_url else f"set base_url for provider {need.provider}"))
        else:
            checks.append(check_cli(need.provider, spec, need.required, timeout_s))
        accounts = [a for a in need.accounts if a in catalog.accounts]
        if not accounts:
            login = os.environ.get(spec.config_dir_env) if spec.config_dir_env else None
            checks.append(check_credential(need.provider, spec.credential_env, need.required, login))
        for account in accounts:
            if ("account", account) in seen:
                continue
            seen.add(("account", account))
            binding = catalog.binding(account)
            assert binding is not None
            # An account names its credential variable: a login in its config dir does not stand in for it.
            checks.append(check_credential(f"{need.provider}:{account}", binding.credential_env, need.required))
            if binding.config_dir:
                checks.append(check_dir(f"{need.provider}:{account}", binding.config_dir))
    redact = Redactor.for_catalog(catalog)
    found = checks + root_checks(catalog, needs) + isolation_checks(catalog, needs)
    return [replace(c, detail=redact(c.detail), fix=redact(c.fix)) for c in found]


def isolation_checks(catalog: Catalog, needs: list[Need]) -> list[Check]:
    """Each agent that runs unsandboxed (`isolation: none`, said so), and a sandbox that cannot start here."""
    checks: dict[str, Check] = {}
    for need in needs:
        for account in _subjects(catalog, need):
            profile = need_profile(catalog, need, account)
            subject = f"{need.provider}:{account}" if account else need.provider
            if profile is None or subject in checks:
                continue
            if profile.isolation == "none":
                checks[subject] = Check(subject, "isolation", "warning", f"isolation: none ({profile.set_by}): the "
                                        "agent runs unsandboxed and can read everything the runner can",
                                        "remove `isolation: none` to run it in the sandbox")
            elif profile.isolation == "sandbox" and (why := unavailable()) is not None:
                checks[subject] = Check(subject, "isolation", _problem(need.required), why, "see the detail")
    return list(checks.values())


def cooldown_checks(needs: list[Need], cooldowns: Mapping[str, Cooldown], now_ms: int) -> list[Check]:
    """Accounts resting after a rate limit or refusal (from the instance's storage). A required provider
    whose every account rests blocks the packet until the first comes back."""
    checks: list[Check] = []
    for need in needs:
        resting = {a: cooldowns[a] for a in need.accounts if a in cooldowns and cooldowns[a].remaining_ms(now_ms)}
        for account, cooldown in resting.items():
            minutes = -(-cooldown.remaining_ms(now_ms) // 60_000)
            if cooldown.state == "auth_refused":  # a refused login, not a limit: a person fixes it
                checks.append(Check(f"{need.provider}:{account}", "cooldown", "warning",
                                    f"its login was refused ({cooldown.reason[:80]}); passed over {minutes} min more",
                                    f"log it in, then `awp accounts lift {account}`"))
                continue
            checks.append(Check(f"{need.provider}:{account}", "cooldown", "warning",
                                f"resting {minutes} min more after {cooldown.failure_class}",
                                f"other accounts are used meanwhile; `awp accounts lift {account}` ends it"))
        if need.accounts and len(resting) == len(need.accounts):
            back = min(c.remaining_ms(now_ms) for c in resting.values())
            checks.append(Check(need.provider, "cooldown", _problem(need.required),
                                f"every account rests; the first is back in {-(-back // 60_000)} min",
                                "wait, add an account, or give the prompt a fallback"))
    return checks
