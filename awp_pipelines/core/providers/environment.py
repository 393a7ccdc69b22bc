"""The agent's environment, built in one place from allowlists: never inherited whole.

It holds the basics a CLI needs to run (PATH, locale, proxies), a HOME of its own (the account's scoped home,
so the operator's ~/.ssh, ~/.git-credentials and ~/.config/gh are not where the agent looks), its own
account's credential under the variable the CLI reads, that account's config dir, and the provider's
endpoint. By design it also carries an explicit extra allowlist: the iteration's agent-control channel
(control.py, `AWP_AGENT_CONTROL_*` and Prompt Runner's `PROMPT_RUNNER_*` names) and the agent's mark
(orphans.py); and an `awp` on its PATH, so `awp agent-control` works from the agent's own shell. Nothing
else: no other account's credential, no git push credentials or SSH agent, no Dagster or Postgres settings.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

from awp_pipelines.core.decisions.agent_control import ENV_NAMES as CONTROL_ENV
from awp_pipelines.core.packet.providers_config import AccountBinding, ProviderSpec

BASE_ENV: tuple[str, ...] = (
    "PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TMPDIR", "USER", "LOGNAME", "SHELL", "TZ",
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE",
)
# The variable each CLI reads its endpoint from: an account's or provider's base_url lands here, and a
# value the user set is passed through (teams run gateways and proxies).
ENDPOINT_ENV: dict[str, tuple[str, ...]] = {
    "claude_code": ("ANTHROPIC_BASE_URL",),
    "codex": ("OPENAI_BASE_URL",),
    "gemini": ("GOOGLE_GEMINI_BASE_URL",),
    "amp": ("AMP_URL",),
    "opencode": (),
    "openai_http": (),
    "command": (),
}
# Settings a CLI needs to behave headless, passed through when the user set them.
PASSTHROUGH_ENV: dict[str, tuple[str, ...]] = {
    "claude_code": ("IS_SANDBOX", "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "ANTHROPIC_MODEL",
                    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "DISABLE_AUTOUPDATER", "DISABLE_TELEMETRY",
                    "DISABLE_ERROR_REPORTING"),
    "gemini": ("GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_CLOUD_PROJECT"),
    "opencode": ("OPENCODE_DISABLE_MODELS_FETCH", "OPENCODE_DISABLE_AUTOUPDATE"),
}
# The CLI's own login (no account configured) lives in the operator's HOME: only where the CLI keeps it is
# handed over, under the variable the CLI reads (variable, its value, the folder that shows a login is there),
# never HOME itself, which the agent's tools (git, ssh, gh) would search for credentials.
LOGIN_DIRS: dict[str, tuple[str, str, str]] = {
    "claude_code": ("CLAUDE_CONFIG_DIR", "~/.claude", "~/.claude"),
    "codex": ("CODEX_HOME", "~/.codex", "~/.codex"),
    "gemini": ("GEMINI_CLI_HOME", "~", "~/.gemini"),  # Gemini looks for `.gemini` in this folder
    "opencode": ("XDG_DATA_HOME", "~/.local/share", "~/.local/share/opencode"),
}
# The mark of an agent process (orphans.py): its packet, its work trees, its Attempt. Never secret.
AGENT_MARK: tuple[str, ...] = ("AWP_AGENT_PACKET", "AWP_AGENT_TREES", "AWP_AGENT_ATTEMPT")
# What the Attempt hands the agent on purpose, besides BASE_ENV: its control channel and its mark.
AGENT_EXTRA: tuple[str, ...] = (*CONTROL_ENV, *AGENT_MARK)
# Never handed to an agent, whatever a caller put in the request: belt and braces over the allowlist.
_FORBIDDEN_PREFIXES = ("DAGSTER_", "PG", "GIT_", "SSH_", "AWP_", "GH_", "GITHUB_TOKEN")
_FORBIDDEN = frozenset({"GIT_ASKPASS", "SSH_ASKPASS", "SSH_AUTH_SOCK", "DATABASE_URL"})
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]")


def forbidden(name: str) -> bool:
    return name not in AGENT_EXTRA and (name in _FORBIDDEN or name.startswith(_FORBIDDEN_PREFIXES))


def credential_var(spec: ProviderSpec, account: AccountBinding | None) -> str | None:
    """The variable the CLI reads its credential from: the provider's, else the account's own name."""
    return spec.credential_env or (account.credential_env if account else None)


def _under(text: str, environ: Mapping[str, str]) -> str:
    """`~` as the operator's HOME (the environment's, not the agent's)."""
    return text.replace("~", environ.get("HOME", "~"), 1) if text.startswith("~") else text


def scoped_home(homes: Path, account: str | None, provider: str) -> Path:
    """The agent's HOME: one folder per account (or per provider, for the CLI's own login) under `homes`."""
    name = account if account else f"{provider}-login"
    return homes / (_UNSAFE_NAME.sub("_", name).lstrip(".") or "_")


def awp_shim(folder: Path) -> Path:
    """`folder/awp`, running this installation's `awp` with this interpreter: prepended to the agent's PATH,
    `awp agent-control` works whatever the agent's own PATH holds. Returns the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    shim = folder / "awp"
    text = f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -c "from awp_pipelines.cli import main; main()" "$@"\n'
    if not shim.is_file() or shim.read_text(encoding="utf-8") != text:
        # Written aside and renamed: an agent of another Attempt may be running the shim right now.
        fd, tmp = tempfile.mkstemp(prefix=".awp.", dir=folder)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, 0o755)
        os.replace(tmp, shim)
    return folder


def bare_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The basics a program needs to run (BASE_ENV) and nothing else: no credential, no setting."""
    return {k: environ[k] for k in BASE_ENV if k in environ}


def agent_env(kind: str, spec: ProviderSpec, account: AccountBinding | None, request_env: Mapping[str, str],
              environ: Mapping[str, str] | None = None, *, home: Path | None = None,
              tools: Path | None = None) -> dict[str, str]:
    """The environment of the agent process for `account` (or the user's own login when None). `request_env`:
    what the Attempt hands over (the account's credential, the control channel, the mark); `home`: the scoped
    HOME (created here); `tools`: a folder put first on PATH (the `awp` shim)."""
    environ = os.environ if environ is None else environ
    env = bare_env(environ)
    env.update({k: v for k, v in request_env.items() if k in BASE_ENV or k in AGENT_EXTRA})
    for name in (*ENDPOINT_ENV.get(kind, ()), *PASSTHROUGH_ENV.get(kind, ())):
        if environ.get(name):
            env[name] = environ[name]
    if tools is not None:
        env["PATH"] = os.pathsep.join(p for p in (str(tools), env.get("PATH", "")) if p)
    target = credential_var(spec, account)
    if account is None:
        # No account: the user's own login, as the CLI would find it on its own.
        names: tuple[str | None, ...] = (target, spec.config_dir_env)
        for maybe in names:
            if maybe and environ.get(maybe):
                env[maybe] = environ[maybe]
        if home is not None and kind in LOGIN_DIRS and LOGIN_DIRS[kind][0] not in env:
            variable, folder, marker = LOGIN_DIRS[kind]
            if Path(_under(marker, environ)).is_dir():
                env[variable] = _under(folder, environ)
    else:
        value = request_env.get(account.credential_env or "") or environ.get(account.credential_env or "")
        if target and value:
            env[target] = value
        if spec.config_dir_env and account.config_dir:
            os.makedirs(account.config_dir, exist_ok=True)
            env[spec.config_dir_env] = account.config_dir
    if home is not None:
        home.mkdir(parents=True, exist_ok=True, mode=0o700)
        env["HOME"] = str(home)
    base_url = (account.base_url if account else None) or spec.base_url
    for name in ENDPOINT_ENV.get(kind, ())[:1]:
        if base_url:
            env[name] = base_url
    return {k: v for k, v in env.items() if not forbidden(k) or k == target}
