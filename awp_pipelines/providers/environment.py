"""The agent's environment, built from an allowlist: never inherited whole.

It holds the basics a CLI needs to run (PATH, HOME, locale, proxies), its own account's credential under
the variable the CLI reads, that account's config dir, and the provider's endpoint. Nothing else: no
other account's credential, no git push credentials or SSH agent, no Dagster or Postgres settings.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from awp_pipelines.catalog import AccountBinding, ProviderSpec

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
# The mark of an agent process (orphans.py): its packet, its work trees, its Attempt. Never secret.
AGENT_MARK: tuple[str, ...] = ("AWP_AGENT_PACKET", "AWP_AGENT_TREES", "AWP_AGENT_ATTEMPT")
# Never handed to an agent, whatever a caller put in the request: belt and braces over the allowlist.
_FORBIDDEN_PREFIXES = ("DAGSTER_", "PG", "GIT_", "SSH_", "AWP_", "GH_", "GITHUB_TOKEN")
_FORBIDDEN = frozenset({"GIT_ASKPASS", "SSH_ASKPASS", "SSH_AUTH_SOCK", "DATABASE_URL"})


def forbidden(name: str) -> bool:
    return name not in AGENT_MARK and (name in _FORBIDDEN or name.startswith(_FORBIDDEN_PREFIXES))


def credential_var(spec: ProviderSpec, account: AccountBinding | None) -> str | None:
    """The variable the CLI reads its credential from: the provider's, else the account's own name."""
    return spec.credential_env or (account.credential_env if account else None)


def agent_env(kind: str, spec: ProviderSpec, account: AccountBinding | None, request_env: Mapping[str, str],
              environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of the agent process for `account` (or the user's own login when None)."""
    environ = os.environ if environ is None else environ
    env = {k: environ[k] for k in BASE_ENV if k in environ}
    env.update({k: v for k, v in request_env.items() if k in BASE_ENV or k in AGENT_MARK})
    for name in (*ENDPOINT_ENV.get(kind, ()), *PASSTHROUGH_ENV.get(kind, ())):
        if environ.get(name):
            env[name] = environ[name]
    target = credential_var(spec, account)
    if account is None:
        # No account: the user's own login, as the CLI would find it on its own.
        names: tuple[str | None, ...] = (target, spec.config_dir_env)
        for maybe in names:
            if maybe and environ.get(maybe):
                env[maybe] = environ[maybe]
    else:
        value = request_env.get(account.credential_env or "") or environ.get(account.credential_env or "")
        if target and value:
            env[target] = value
        if spec.config_dir_env and account.config_dir:
            os.makedirs(account.config_dir, exist_ok=True)
            env[spec.config_dir_env] = account.config_dir
    base_url = (account.base_url if account else None) or spec.base_url
    for name in ENDPOINT_ENV.get(kind, ())[:1]:
        if base_url:
            env[name] = base_url
    return {k: v for k, v in env.items() if not forbidden(k) or k == target}
