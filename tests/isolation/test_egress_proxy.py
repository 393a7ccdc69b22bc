"""The egress proxy outside the sandbox, over real sockets: it carries CONNECT and absolute-URI requests to
granted hosts only, compares hosts as written (case, trailing dots, IP literals, IPv6), never lets a name
reach this machine unless a rule names the machine, logs refusals without headers, and leaves nothing behind."""

from __future__ import annotations

import json
import socket
import threading
from dataclasses import asdict
from pathlib import Path

import pytest
from egress_support import get, http_server, through_proxy

from awp_pipelines.core.isolation.egress import EgressHandle, start_egress
from awp_pipelines.core.isolation.hosts import LOOPBACK_NAMES, HostError, HostRule, normal_host
from awp_pipelines.core.isolation.network_policy import NetworkGrant, NetworkPolicy
from awp_pipelines.core.records.live_lines import live_line


def _egress(tmp_path: Path, network: object, base_url: str | None = None) -> EgressHandle:
    return start_egress(NetworkPolicy(network=network), tmp_path, kind="command", base_url=base_url)  # type: ignore[arg-type]


def _connect(authority: str) -> bytes:
    return f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n".encode()


def test_connect_reaches_a_granted_port_and_is_refused_on_any_other(tmp_path: Path) -> None:
    with http_server("granted") as granted, http_server("other") as other, \
            _egress(tmp_path, [f"127.0.0.1:{granted.port}"]) as egress:
        proxy = egress.socket_dir / "proxy"
        reply = through_proxy(proxy, _connect(f"127.0.0.1:{granted.port}"), then=get("x"))
        assert reply.startswith(b"HTTP/1.1 200 Connection established") and reply.endswith(b"server granted")
        refused = through_proxy(proxy, _connect(f"127.0.0.1:{other.port}"), then=get("x"))
        assert refused.startswith(b"HTTP/1.1 403") and b"not on this Attempt's network allowlist" in refused
        assert other.seen == []
        assert [(d.method, d.host, d.port) for d in egress.denials()] == [("CONNECT", "127.0.0.1", other.port)]


def test_an_absolute_uri_is_carried_to_a_granted_host_only_without_proxy_credentials(tmp_path: Path) -> None:
    with http_server("granted") as granted, http_server("other") as other, \
            _egress(tmp_path, [f"127.0.0.1:{granted.port}"]) as egress:
        proxy = egress.socket_dir / "proxy"
        request = (f"GET http://127.0.0.1:{granted.port}/path?q=1 HTTP/1.1\r\nHost: 127.0.0.1:{granted.port}\r\n"
                   "Proxy-Authorization: Basic c2VjcmV0\r\nAuthorization: Bearer kept-for-the-host\r\n\r\n")
        assert through_proxy(proxy, request.encode()).endswith(b"server granted")
        assert "proxy-authorization" not in granted.seen[0]
        assert granted.seen[0]["authorization"] == "Bearer kept-for-the-host"
        secret = "Bearer sk-ant-never-logged-0123456789"
        denied = (f"GET http://127.0.0.1:{other.port}/token?key=sk-in-path HTTP/1.1\r\nHost: x\r\n"
                  f"Authorization: {secret}\r\n\r\n")
        assert through_proxy(proxy, denied.encode()).startswith(b"HTTP/1.1 403")
        assert other.seen == []
        egress.denial_log.flush()
        log = egress.denial_log.path.read_text()
        assert json.loads(log)["host"] == "127.0.0.1" and "sk-" not in log and "Authorization" not in log


@pytest.mark.parametrize("written, asked, port, granted", [
    ("example.com", "EXAMPLE.com.", 443, True),     # case and the trailing dot of a fully qualified name
    ("example.com", "example.com", 80, True),       # a host without a port opens 80 and 443
    ("example.com", "example.com", 8443, False),
    ("example.com:8443", "example.com", 443, False),  # a port written is the only port
    ("example.com", "api.example.com", 443, False),
    ("*.example.com", "api.example.com", 443, True),
    ("*.example.com", "example.com", 443, False),   # a wildcard is subdomains, not the domain
    ("*.example.com", "evilexample.com", 443, False),
    ("127.0.0.1:9", "[::ffff:127.0.0.1]", 9, True),  # an IPv4-mapped IPv6 address is its IPv4 address
    ("[::1]:9", "[0:0:0:0:0:0:0:1]", 9, True),      # IPv6 compared in canonical form
    ("::1", "[::1]", 443, True),
    ("127.0.0.1:9", "localhost", 9, False),         # a name is not the address it resolves to
    ("localhost:9", "127.0.0.1", 9, False),
])
def test_hosts_are_compared_as_written_after_normalising(written: str, asked: str, port: int,
                                                         granted: bool) -> None:
    assert HostRule.parse(written).matches(normal_host(asked), port) is granted


@pytest.mark.parametrize("text", ["127.1", "2130706433", "0x7f.0.0.1", "exa mple.com", "-bad.com", "a..b", "",
                                  "host:0", "host:99999", "[::1"])
def test_unreadable_hosts_are_refused_with_how_to_write_them(text: str) -> None:
    with pytest.raises(HostError):
        HostRule.parse(text)
    with pytest.raises(ValueError, match="write host, host:port"):
        NetworkPolicy(network=[text])


def test_an_ip_in_a_form_the_resolver_reads_as_loopback_is_refused_even_when_open(tmp_path: Path) -> None:
    with http_server("local") as local, _egress(tmp_path, "open") as egress:
        for authority in (f"127.1:{local.port}", f"2130706433:{local.port}"):
            assert through_proxy(egress.socket_dir / "proxy", _connect(authority)).startswith(b"HTTP/1.1 403")
        assert local.seen == []


def test_open_reaches_any_host_but_this_machine(tmp_path: Path) -> None:
    with http_server("local") as local, _egress(tmp_path, "open") as egress:
        for authority in (f"127.0.0.1:{local.port}", f"localhost:{local.port}", f"[::ffff:127.0.0.1]:{local.port}"):
            reply = through_proxy(egress.socket_dir / "proxy", _connect(authority), then=get("x"))
            assert reply.startswith(b"HTTP/1.1 403") and b"resolves to this machine" in reply
        assert local.seen == []
        assert egress.granted_hosts == ["*"]


def _loopback_alias() -> str:
    """A name this machine resolves to a loopback address that is not a well-known loopback name."""
    names = [socket.gethostname()]
    for line in Path("/etc/hosts").read_text().splitlines():
        fields = line.split("#", 1)[0].split()
        if fields and fields[0].startswith(("127.", "::1")):
            names += fields[1:]
    for name in names:
        if name.lower() in LOOPBACK_NAMES:
            continue
        try:
            if all(info[4][0].startswith("127.") or info[4][0] == "::1" for info in socket.getaddrinfo(name, 80)):
                return name
        except OSError:
            continue
    pytest.skip("no name in /etc/hosts resolves to loopback besides localhost")


def test_a_granted_name_that_resolves_to_this_machine_is_refused(tmp_path: Path) -> None:
    alias = _loopback_alias()
    with http_server("local") as local, _egress(tmp_path, [f"{alias}:{local.port}"]) as egress:
        reply = through_proxy(egress.socket_dir / "proxy", _connect(f"{alias}:{local.port}"), then=get("x"))
        assert reply.startswith(b"HTTP/1.1 403") and b"resolves to this machine" in reply
        assert local.seen == []


def test_an_ipv6_literal_granted_with_its_port_is_reached(tmp_path: Path) -> None:
    with http_server("six", "::1", socket.AF_INET6) as six, _egress(tmp_path, [f"[::1]:{six.port}"]) as egress:
        reply = through_proxy(egress.socket_dir / "proxy", _connect(f"[::1]:{six.port}"), then=get("x"))
        assert reply.endswith(b"server six")
        assert egress.grant.forwarded_ports == (six.port,)


def test_provider_grants_the_base_url_and_the_clis_known_hosts_and_none_grants_nothing() -> None:
    grant = NetworkGrant.resolve(NetworkPolicy(), kind="claude_code", base_url="http://127.0.0.1:8123/v1")
    assert grant.hosts[:2] == ["127.0.0.1:8123", "api.anthropic.com"] and grant.forwarded_ports == (8123,)
    gateway = NetworkGrant.resolve(NetworkPolicy(network=["provider", "pypi.org"]), kind="codex",
                                   base_url="https://gw.example.com/v1")
    assert gateway.hosts == ["gw.example.com:443", "api.openai.com", "chatgpt.com", "auth.openai.com", "pypi.org"]
    assert gateway.forwarded_ports == ()
    assert NetworkGrant.resolve(NetworkPolicy(network="none"), kind="codex", base_url="https://x.org").hosts == []


def test_close_leaves_no_thread_socket_or_connection(tmp_path: Path) -> None:
    before = set(threading.enumerate())
    with http_server("granted") as granted:
        egress = _egress(tmp_path, [f"127.0.0.1:{granted.port}"], base_url=f"http://127.0.0.1:{granted.port}")
        tunnel = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        tunnel.connect(str(egress.socket_dir / "proxy"))
        tunnel.sendall(_connect(f"127.0.0.1:{granted.port}"))
        assert tunnel.recv(4096).startswith(b"HTTP/1.1 200")  # a tunnel left open by its client
        assert sorted(p.name for p in egress.socket_dir.iterdir()) == ["port-" + str(granted.port), "proxy"]
        egress.close()
        tunnel.settimeout(5)
        assert tunnel.recv(4096) == b""  # cut by close()
        tunnel.close()
        egress.close()  # idempotent
    assert not egress.socket_dir.exists()
    assert [t for t in threading.enumerate() if t not in before and t.is_alive()] == []


def test_a_refusal_is_one_live_line_naming_the_host_and_why(tmp_path: Path) -> None:
    with _egress(tmp_path, ["example.org"]) as egress:
        through_proxy(egress.socket_dir / "proxy", _connect("other.example.org:443"))
        [denial] = egress.denials()
    line = live_line({"type": "network_denied", **asdict(denial)})
    assert line is not None and line.endswith(
        "network: refused CONNECT other.example.org:443 (not on this Attempt's network allowlist)")
