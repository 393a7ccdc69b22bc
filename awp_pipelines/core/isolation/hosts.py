"""Host rules of a network allowlist, and the one way a requested host is read before it is compared.

A rule is `host` (ports 80 and 443), `host:port`, `*.domain` (any subdomain, not the domain itself), an IP
literal (`10.0.0.5`, `::1`, `[::1]:8080`). A requested host is compared after the same normalising: lower
case, no trailing dot, no IPv6 brackets, an IPv4-mapped IPv6 address as its IPv4 address. A name is compared
as written, never by what it resolves to: `localhost` is not `127.0.0.1`, and `127.1` (which the resolver
reads as 127.0.0.1) is not a host at all.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

DEFAULT_PORTS = frozenset({80, 443})
_LABEL = r"(?!-)[a-z0-9_-]{1,63}(?<!-)"
_HOSTNAME = re.compile(rf"{_LABEL}(\.{_LABEL})*")
_NUMERIC = re.compile(r"[0-9.]+|0x[0-9a-f.x]+")
# Names that mean the machine itself, whatever a resolver says.
LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})


class HostError(ValueError):
    """A host or rule that cannot be read; the message says what is wrong and how to write it."""


def normal_host(text: str) -> str:
    """`text` (no port) as it is compared: lower case, no trailing dot or brackets, IPs in canonical form."""
    host = text.strip().lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    host = host.removesuffix(".")
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        if not host or len(host) > 253 or not _HOSTNAME.fullmatch(host):
            raise HostError(f"'{text}' is not a host name or IP address") from None
        if _NUMERIC.fullmatch(host.rsplit(".", 1)[-1]):
            raise HostError(f"'{text}' looks like an IP address but is not one in dotted-quad form "
                            "(write e.g. 127.0.0.1)") from None
        return host
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.compressed


def is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def split_host_port(text: str, default_port: int | None) -> tuple[str, int | None]:
    """`host`, `host:port`, `[v6]`, `[v6]:port` or a bare IPv6 literal → (host text, port or default)."""
    text = text.strip()
    if text.startswith("["):
        host, sep, rest = text[1:].partition("]")
        if not sep or (rest and not rest.startswith(":")):
            raise HostError(f"'{text}': an IPv6 address with a port is written [address]:port")
        port_text = rest[1:] if rest else None
    elif text.count(":") > 1:
        host, port_text = text, None  # a bare IPv6 literal carries no port
    else:
        host, sep, port_text_or_empty = text.partition(":")
        port_text = port_text_or_empty if sep else None
    if port_text is None:
        return host, default_port
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise HostError(f"'{text}': the port must be a number from 1 to 65535")
    return host, int(port_text)


@dataclass(frozen=True)
class HostRule:
    """One allowlist entry: a host (or `*.domain`) and the ports it opens."""

    host: str
    ports: frozenset[int]
    wildcard: bool = False

    @classmethod
    def parse(cls, text: str) -> HostRule:
        host, port = split_host_port(text, None)
        wildcard = host.startswith("*.")
        host = normal_host(host[2:] if wildcard else host)
        if wildcard and is_ip(host):
            raise HostError(f"'{text}': a wildcard covers subdomains of a name, not an IP address")
        return cls(host, frozenset({port}) if port else DEFAULT_PORTS, wildcard)

    def matches(self, host: str, port: int) -> bool:
        """`host` must already be normal (normal_host)."""
        name_ok = host.endswith("." + self.host) if self.wildcard else host == self.host
        return name_ok and port in self.ports

    @property
    def names_the_machine(self) -> bool:
        """The rule grants the runner's own machine on purpose (a loopback IP or name written out)."""
        return not self.wildcard and (self.host in LOOPBACK_NAMES
                                      or (is_ip(self.host) and ipaddress.ip_address(self.host).is_loopback))

    def __str__(self) -> str:
        host = f"*.{self.host}" if self.wildcard else self.host
        if self.ports == DEFAULT_PORTS:
            return host
        shown = f"[{host}]" if ":" in host else host
        return f"{shown}:{next(iter(self.ports))}"
