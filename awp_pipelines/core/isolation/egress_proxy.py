"""The proxy outside the sandbox: HTTP CONNECT and plain-HTTP absolute URIs, to granted hosts only.

Deny by default. A host is compared as written (hosts.py), then resolved once here, and the connection goes to
the address that was checked, so a name cannot be re-resolved to somewhere else in between. A granted name
that resolves to the runner's own machine (loopback, link-local such as a cloud's metadata address, or
unspecified) is refused unless its rule names the machine on purpose. Each refusal is one JSON line in the
Attempt's denial log: method, host, port and why; never a header, path or body (they may carry secrets).
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.parse import urlsplit

from awp_pipelines.core.isolation.forwarder import relay
from awp_pipelines.core.isolation.hosts import HostError, normal_host, split_host_port
from awp_pipelines.core.isolation.network_policy import NetworkGrant

_MAX_HEAD = 65536
_DROPPED_HEADERS = (b"proxy-authorization:", b"proxy-connection:", b"connection:", b"keep-alive:")
_CONNECT_TIMEOUT_S = 30


@dataclass(frozen=True)
class Denial:
    """One refused connection, as the Attempt records it."""

    at: float
    method: str
    host: str
    port: int | None
    reason: str


class Refused(Exception):
    """A request the proxy answers itself (status and reason), without reaching any host."""

    def __init__(self, status: int, reason: str, *, host: str = "?", port: int | None = None) -> None:
        super().__init__(reason)
        self.status, self.reason, self.host, self.port = status, reason, host, port


@dataclass(frozen=True)
class ProxyRequest:
    """What a client asked for: the method, the destination, and the bytes to send it first."""

    method: str
    host: str
    port: int
    first_bytes: bytes  # CONNECT: what the client sent past its request; HTTP: the rewritten request head

    @classmethod
    def parse(cls, head: bytes, rest: bytes) -> ProxyRequest:
        line, _, headers = head.partition(b"\r\n")
        try:
            method, target, version = line.decode("ascii").split(" ")
        except ValueError:
            raise Refused(400, "not an HTTP proxy request") from None
        if method == "CONNECT":
            host_text, port = split_host_port(target, None)
            if port is None:
                raise Refused(400, "CONNECT needs host:port")
            return cls(method, _normal(host_text, port), port, rest)
        url = urlsplit(target)
        if url.scheme != "http" or not url.hostname:
            raise Refused(400, "a proxied request names an absolute http:// URL (use CONNECT for https)")
        port = url.port or 80
        path = (url.path or "/") + (f"?{url.query}" if url.query else "")
        kept = [h for h in headers.split(b"\r\n") if h and not h.lower().startswith(_DROPPED_HEADERS)]
        # Connection: close ends the exchange with this response; the client opens a new one for the next.
        new_head = b"\r\n".join([f"{method} {path} {version}".encode(), *kept, b"Connection: close", b"", b""])
        return cls(method, _normal(url.hostname, port), port, new_head + rest)


def _normal(host: str, port: int) -> str:
    try:
        return normal_host(host)
    except HostError as error:
        raise Refused(403, str(error), port=port) from None


def _is_machine(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback or ip.is_link_local or ip.is_unspecified or ip.is_multicast


def destination(grant: NetworkGrant, host: str, port: int) -> list[tuple]:
    """The checked socket addresses for `host` (normal) on `port`, or Refused saying why not."""
    rule = grant.rule_for(host, port)
    if rule is None and grant.mode != "open":
        raise Refused(403, "not on this Attempt's network allowlist", host=host, port=port)
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as error:
        raise Refused(502, f"cannot resolve: {error.strerror or error}", host=host, port=port) from None
    if rule is None or not rule.names_the_machine:
        mine = sorted({str(info[4][0]) for info in infos if _is_machine(str(info[4][0]))})
        if mine:
            raise Refused(403, f"resolves to this machine ({', '.join(mine)}); only a rule naming the "
                          "loopback address with its port grants it", host=host, port=port)
    return [(info[0], info[4]) for info in infos]


def connect(addresses: list[tuple]) -> socket.socket:
    """A connection to the first of `addresses` that answers (the addresses checked, not a new lookup)."""
    error: OSError = OSError("no address")
    for family, address in addresses:
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.settimeout(_CONNECT_TIMEOUT_S)
        try:
            sock.connect(address)
        except OSError as failed:
            sock.close()
            error = failed
            continue
        sock.settimeout(None)
        return sock
    raise error


def _read_head(conn: socket.socket) -> tuple[bytes, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(8192)
        if not chunk or len(data) > _MAX_HEAD:
            raise Refused(400, "incomplete or oversized request head")
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest


def _answer(conn: socket.socket, status: int, text: str) -> None:
    reason = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway"}.get(status, "Error")
    body = f"awp egress: {text}\n".encode()
    with contextlib.suppress(OSError):
        conn.sendall(f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain\r\nX-Awp-Egress: refused\r\n"
                     f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)


class DenialLog:
    """The Attempt's denial log: JSON lines, appended by every connection's thread."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def write(self, denial: Denial) -> None:
        with self._lock, self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(asdict(denial)) + "\n")

    def read(self) -> list[Denial]:
        if not self.path.is_file():
            return []
        return [Denial(**json.loads(line)) for line in self.path.read_text(encoding="utf-8").splitlines() if line]


def serve_client(conn: socket.socket, grant: NetworkGrant, log: DenialLog,
                 track: Callable[[socket.socket], None] | None = None) -> None:
    """Answer one client of the proxy: refuse it, or connect it to its granted destination and relay."""
    method = "?"
    try:
        head, rest = _read_head(conn)
        method = head.split(b" ", 1)[0].decode("ascii", "replace")[:16]
        request = ProxyRequest.parse(head, rest)
        upstream = connect(destination(grant, request.host, request.port))
    except Refused as refused:
        log.write(Denial(time.time(), method, refused.host, refused.port, refused.reason))
        where = f"{refused.host}:{refused.port} " if refused.port is not None else ""
        _answer(conn, refused.status, f"{where}refused: {refused.reason}")
        conn.close()
        return
    except OSError as error:
        _answer(conn, 502, f"cannot connect: {error.strerror or error}")
        conn.close()
        return
    if track is not None:
        track(upstream)
    if request.method == "CONNECT":
        conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
    if request.first_bytes:
        upstream.sendall(request.first_bytes)
    relay(conn, upstream)
