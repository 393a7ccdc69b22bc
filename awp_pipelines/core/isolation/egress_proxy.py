"""The proxy outside the sandbox: HTTP CONNECT and plain-HTTP absolute URIs, to granted hosts only.

Deny by default. A host is compared as written (hosts.py), then resolved once here, and the connection goes to
the address that was checked, so a name cannot be re-resolved to somewhere else in between. A granted name
that resolves to the runner's own machine (loopback, link-local such as a cloud's metadata address,
unspecified, or any address of one of this machine's interfaces) is refused unless its rule names the machine
on purpose. Refusals are counted per method, host, port and reason, and written to the Attempt's denial log
as one JSON line per key per interval with its count (an agent that retries in a loop writes a few lines, not
thousands); never a header, path or body (they may carry secrets). A client that sends no request head within
HEAD_TIMEOUT_S is dropped.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from urllib.parse import urlsplit

from awp_pipelines.core.isolation.forwarder import relay
from awp_pipelines.core.isolation.hosts import HostError, normal_host, split_host_port
from awp_pipelines.core.isolation.network_policy import NetworkGrant

_MAX_HEAD = 65536
_DROPPED_HEADERS = (b"proxy-authorization:", b"proxy-connection:", b"connection:", b"keep-alive:")
_CONNECT_TIMEOUT_S = 30
HEAD_TIMEOUT_S = 30.0  # a client that opens a connection and sends no request: dropped
DENIAL_INTERVAL_S = 10.0  # refusals of one key within this interval are one line with a count
DENIAL_KEYS = 100  # distinct keys per interval; past them, one line counts the rest


@dataclass(frozen=True)
class Denial:
    """One refused connection, as the Attempt records it."""

    at: float
    method: str
    host: str
    port: int | None
    reason: str
    count: int = 1  # refusals of this method, host, port and reason in the interval that begins at `at`


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
    return ip.is_loopback or ip.is_link_local or ip.is_unspecified or ip.is_multicast or is_local_address(str(ip))


def is_local_address(address: str) -> bool:
    """Whether `address` belongs to one of this machine's interfaces (eth0's 192.0.2.2 as much as 127.0.0.1):
    the kernel lets a socket bind only to its own addresses, so the question is asked of it, for every
    interface there is now, with no list to keep up to date."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((address, 0))
        except OSError:
            return False
    return True


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
    conn.settimeout(HEAD_TIMEOUT_S)
    while b"\r\n\r\n" not in data:
        try:
            chunk = conn.recv(8192)
        except TimeoutError:
            raise Refused(408, f"no request within {HEAD_TIMEOUT_S:.0f} s") from None
        if not chunk or len(data) > _MAX_HEAD:
            raise Refused(400, "incomplete or oversized request head")
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest


def _answer(conn: socket.socket, status: int, text: str) -> None:
    reason = {400: "Bad Request", 403: "Forbidden", 408: "Request Timeout", 502: "Bad Gateway",
              503: "Service Unavailable"}.get(status, "Error")
    body = f"awp egress: {text}\n".encode()
    with contextlib.suppress(OSError):
        conn.sendall(f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain\r\nX-Awp-Egress: refused\r\n"
                     f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)


class DenialLog:
    """The Attempt's denial log: refusals counted per key (method, host, port, reason), written as one JSON line
    per key per interval, with its count. Written by every connection's thread; `flush` writes what is counted
    (reading and closing flush)."""

    def __init__(self, path: Path, *, interval_s: float = DENIAL_INTERVAL_S, max_keys: int = DENIAL_KEYS,
                 clock: Callable[[], float] = time.time) -> None:
        self.path = path
        self.interval_s, self.max_keys, self._clock = interval_s, max_keys, clock
        self._lock = threading.Lock()
        self._counted: dict[tuple[str, str, int | None, str], Denial] = {}
        self._since: float | None = None

    def write(self, denial: Denial) -> None:
        with self._lock:
            now = self._clock()
            if self._since is not None and now - self._since >= self.interval_s:
                self._flush()
            self._since = now if self._since is None else self._since
            key = (denial.method, denial.host, denial.port, denial.reason)
            if key not in self._counted and len(self._counted) >= self.max_keys:
                key = ("*", "*", None, f"refusals past the first {self.max_keys} hosts of this interval")
                denial = Denial(denial.at, *key)
            seen = self._counted.get(key)
            self._counted[key] = denial if seen is None else replace(seen, count=seen.count + denial.count)

    def flush(self) -> None:
        with self._lock:
            self._flush()

    def _flush(self) -> None:
        counted, self._counted, self._since = list(self._counted.values()), {}, None
        if counted:
            with self.path.open("a", encoding="utf-8") as fh:
                fh.writelines(json.dumps(asdict(denial)) + "\n" for denial in counted)

    def read(self) -> list[Denial]:
        self.flush()
        if not self.path.is_file():
            return []
        return [Denial(**json.loads(line)) for line in self.path.read_text(encoding="utf-8").splitlines() if line]


def refuse(conn: socket.socket, log: DenialLog, refused: Refused, method: str = "?") -> None:
    """Answer `refused` on `conn`, count it in `log`, close the connection."""
    log.write(Denial(time.time(), method, refused.host, refused.port, refused.reason))
    conn.settimeout(5)  # the answer is small; a client that does not read it is not waited for
    where = f"{refused.host}:{refused.port} " if refused.port is not None else ""
    _answer(conn, refused.status, f"{where}refused: {refused.reason}")
    conn.close()


def serve_client(conn: socket.socket, grant: NetworkGrant, log: DenialLog,
                 track: Callable[[socket.socket], None] | None = None, *, idle_s: float | None = None) -> None:
    """Answer one client of the proxy: refuse it, or connect it to its granted destination and relay."""
    method = "?"
    try:
        head, rest = _read_head(conn)
        method = head.split(b" ", 1)[0].decode("ascii", "replace")[:16]
        request = ProxyRequest.parse(head, rest)
        upstream = connect(destination(grant, request.host, request.port))
    except Refused as refused:
        refuse(conn, log, refused, method)
        return
    except OSError as error:
        _answer(conn, 502, f"cannot connect: {error.strerror or error}")
        conn.close()
        return
    if track is not None:
        track(upstream)
    conn.settimeout(None)  # the head's timeout is over; the relay's idle bound (if any) follows
    if request.method == "CONNECT":
        conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
    if request.first_bytes:
        upstream.sendall(request.first_bytes)
    relay(conn, upstream, idle_s)
