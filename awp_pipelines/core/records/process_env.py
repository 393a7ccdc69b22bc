"""The environment of a process AWP starts, by allow-list: never the runner's environment as it is.

The runner's environment holds what the agent must never reach and most programs never need: the instance's
database URL and password, a forge token during a hand-off, cloud credentials. Every subprocess AWP starts is
given an environment built here (or by the agent's own builder, providers/environment.py), and the
secret a step needs is passed to that step's process alone (`extra`): the forge token to the one `git push`.
`tests/core/records/test_process_env.py` checks every subprocess call of the package passes one.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

# What any program may need to start and speak: where programs are, the locale, the time zone, the terminal.
BASE = ("PATH", "LANG", "LANGUAGE", "TZ", "TERM", "TMPDIR", "USER", "LOGNAME")
# What git needs for a network command, on top: the operator's HOME (its global config names the credential
# helper and the ssh settings), the ssh agent, the proxies of the host and the CA bundle.
NETWORK = ("HOME", "SSH_AUTH_SOCK", "GIT_SSH_COMMAND", "HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "https_proxy",
           "http_proxy", "no_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR", "GIT_SSL_CAINFO", "XDG_CONFIG_HOME")


def allowed_env(keep: Iterable[str] = (), extra: Mapping[str, str] | None = None,
                source: Mapping[str, str] | None = None) -> dict[str, str]:
    """BASE and `keep` as the runner has them (LC_* too), then `extra` on top: nothing else of the runner's."""
    env = source if source is not None else os.environ
    names = {*BASE, *keep}
    picked = {k: v for k, v in env.items() if k in names or k.startswith("LC_")}
    return {**picked, **(extra or {})}
