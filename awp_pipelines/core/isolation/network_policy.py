"""What an Attempt's agent may reach on the network: the `network:` setting and the grant it resolves to.

`provider` (the default) grants the host of the provider's or account's `base_url` and the hosts its CLI is
known to call (KNOWN_HOSTS); `open` grants any host but the runner's own machine; `none` grants nothing; a
list grants exactly its entries, where the word `provider` stands for the provider's hosts. A rule naming
the runner's loopback with a port (a local `base_url` such as http://127.0.0.1:8123) is also forwarded as
that same port inside the sandbox, so the URL works there unchanged (CLIs skip proxies for loopback).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from awp_pipelines.core.isolation.hosts import DEFAULT_PORTS, HostError, HostRule

PROVIDER = "provider"
Mode = Literal["provider", "open", "none"]
# The hosts each CLI calls besides its base_url: the API, and the login or token refresh of a subscription.
KNOWN_HOSTS: dict[str, tuple[str, ...]] = {
    "claude_code": ("api.anthropic.com", "claude.ai", "platform.claude.com", "console.anthropic.com"),
    "codex": ("api.openai.com", "chatgpt.com", "auth.openai.com"),
    "gemini": ("generativelanguage.googleapis.com", "cloudcode-pa.googleapis.com", "oauth2.googleapis.com",
               "aiplatform.googleapis.com"),
    # OpenCode's own gateway, its models list, and the providers its models name most often.
    "opencode": ("opencode.ai", "models.dev", "openrouter.ai", "api.anthropic.com", "api.openai.com",
                 "generativelanguage.googleapis.com"),
    "amp": ("ampcode.com",),  # its server runs the session's model (the thread actor)
    "openai_http": ("api.openai.com",),
    "command": (),
    "simulated": (),
}
NETWORK_HELP = ("What the agent may reach: `provider` (default: the provider's base_url and its CLI's known "
                "hosts), `open` (any host but this machine), `none` (nothing), or a list of `host`, `host:port`, "
                "`*.domain`, IP literals, and `provider` for the provider's hosts. A host without a port opens "
                "ports 80 and 443. Git remotes are never on it: AWP pushes outside the sandbox.")


def _readable(entry: str) -> str:
    if entry != PROVIDER:
        try:
            HostRule.parse(entry)
        except HostError as error:
            raise ValueError(f"{error}; write host, host:port, *.domain, an IP literal or `provider`") from None
    return entry


# The type of a `network:` field, for any model that carries one (an execution profile, a provider, a packet).
Network = Mode | list[Annotated[str, AfterValidator(_readable)]]


class NetworkPolicy(BaseModel):
    """The `network:` setting of an execution profile."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    network: Network = Field("provider", description=NETWORK_HELP)


def base_url_rule(base_url: str) -> HostRule:
    """The rule that opens exactly a base_url's host and port (the scheme's default port when none)."""
    parts = urlsplit(base_url)
    if not parts.hostname:
        raise HostError(f"base_url '{base_url}' names no host; write e.g. https://gateway.example.com/v1")
    port = parts.port or (80 if parts.scheme == "http" else 443)
    return HostRule.parse(f"[{parts.hostname}]:{port}" if ":" in parts.hostname else f"{parts.hostname}:{port}")


def provider_rules(kind: str, base_url: str | None) -> list[HostRule]:
    rules = [base_url_rule(base_url)] if base_url else []
    return rules + [HostRule.parse(host) for host in KNOWN_HOSTS.get(kind, ())]


@dataclass(frozen=True)
class NetworkGrant:
    """The resolved grant of one Attempt: whether anything is reachable, which hosts, which forwarded ports."""

    mode: Literal["allowlist", "open", "none"]
    rules: tuple[HostRule, ...] = ()

    @classmethod
    def resolve(cls, policy: NetworkPolicy, *, kind: str, base_url: str | None) -> NetworkGrant:
        setting = policy.network
        if setting == "none":
            return cls("none")
        if setting in (PROVIDER, "open"):
            return cls("open" if setting == "open" else "allowlist", tuple(provider_rules(kind, base_url)))
        rules: list[HostRule] = []
        for entry in setting:
            rules += provider_rules(kind, base_url) if entry == PROVIDER else [HostRule.parse(entry)]
        return cls("allowlist", tuple(dict.fromkeys(rules)))

    def rule_for(self, host: str, port: int) -> HostRule | None:
        """The rule that grants `host` (normal) on `port`, if one does."""
        return next((rule for rule in self.rules if rule.matches(host, port)), None)

    @property
    def forwarded_ports(self) -> tuple[int, ...]:
        """Loopback ports granted by an explicit `host:port` rule: forwarded as themselves into the sandbox."""
        return tuple(sorted({port for rule in self.rules if rule.names_the_machine and rule.ports != DEFAULT_PORTS
                             for port in rule.ports}))

    def loopback_target(self, port: int) -> str:
        """The host a forwarded port is reached at outside (as the rule wrote it: 127.0.0.1, ::1, localhost)."""
        return next(rule.host for rule in self.rules if rule.names_the_machine and port in rule.ports)

    @property
    def hosts(self) -> list[str]:
        """What is granted, as written in a record: `*` for open (besides the rules), nothing for none."""
        return (["*"] if self.mode == "open" else []) + [str(rule) for rule in self.rules]
