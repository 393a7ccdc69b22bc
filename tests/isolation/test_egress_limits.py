"""The egress proxy's bounds, over real sockets: `open` never reaches an address of this machine's own
interfaces (not only loopback), a cap on connections open at once, a client that sends nothing is dropped, an
idle tunnel is cut, and refusals are counted per host and interval instead of a line each."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest
from egress_support import get, http_server, through_proxy

from awp_pipelines.core.isolation import egress_proxy
from awp_pipelines.core.isolation.egress import EgressHandle
from awp_pipelines.core.isolation.egress_proxy import Denial, DenialLog, is_local_address
from awp_pipelines.core.isolation.network_policy import NetworkGrant, NetworkPolicy


def _handle(tmp_path: Path, network: object, **bounds: float) -> EgressHandle:
    grant = NetworkGrant.resolve(NetworkPolicy(network=network), kind="command", base_url=None)  # type: ignore[arg-type]
    return EgressHandle(grant, tmp_path, **bounds).start()  # type: ignore[arg-type]


def _connect(authority: str) -> bytes:
    return f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n".encode()


def _own_address() -> str:
    """An address of one of this machine's interfaces that is not loopback (eth0's)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.200", 9))  # no packet is sent: the kernel picks the source address
        except OSError:
            pytest.skip("no route off this machine: no non-loopback address to try")
        address = str(probe.getsockname()[0])
    if address.startswith("127."):
        pytest.skip("this machine has no non-loopback address")
    return address


def test_open_refuses_every_address_of_this_machine_not_only_loopback(tmp_path: Path) -> None:
    address = _own_address()
    assert is_local_address(address) and is_local_address("127.0.0.1")
    assert not is_local_address("192.0.2.254") and not is_local_address("8.8.8.8")
    with http_server("mine", "0.0.0.0") as mine, _handle(tmp_path, "open") as egress:
        reply = through_proxy(egress.socket_dir / "proxy", _connect(f"{address}:{mine.port}"), then=get("x"))
        assert reply.startswith(b"HTTP/1.1 403") and b"resolves to this machine" in reply, reply
        assert mine.seen == []
        # The same address granted by name (a rule that is not the loopback) is refused too.
    with http_server("mine", "0.0.0.0") as mine, _handle(tmp_path, [f"{address}:{mine.port}"]) as egress:
        reply = through_proxy(egress.socket_dir / "proxy", _connect(f"{address}:{mine.port}"), then=get("x"))
        assert reply.startswith(b"HTTP/1.1 403") and mine.seen == []


def test_connections_past_the_cap_are_refused_and_a_freed_slot_serves_again(tmp_path: Path) -> None:
    with http_server("granted") as granted, _handle(tmp_path, [f"127.0.0.1:{granted.port}"],
                                                   max_connections=3) as egress:
        proxy = str(egress.socket_dir / "proxy")
        held = []
        for _ in range(3):  # three clients that open a connection and say nothing
            client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            client.connect(proxy)
            held.append(client)
        time.sleep(0.2)
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as late:  # answered before it asks
            late.settimeout(10)
            late.connect(proxy)
            refused = late.recv(4096)
        assert refused.startswith(b"HTTP/1.1 503") and b"more than 3 connections open at once" in refused
        held.pop().close()
        deadline = time.monotonic() + 5
        while True:  # the freed slot serves a new client, once the proxy has seen the close
            try:
                reply = through_proxy(egress.socket_dir / "proxy", _connect(f"127.0.0.1:{granted.port}"),
                                      then=get("x"))
            except OSError as refused_before_sent:  # still full: the 503 came and the proxy hung up first
                reply = repr(refused_before_sent).encode()
            if reply.endswith(b"server granted") or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert reply.endswith(b"server granted"), reply
        for client in held:
            client.close()
        assert any(d.reason.startswith("more than 3") for d in egress.denials())


def test_a_client_that_sends_nothing_is_dropped_and_an_idle_tunnel_is_cut(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(egress_proxy, "HEAD_TIMEOUT_S", 0.5)
    with http_server("granted") as granted, _handle(tmp_path, [f"127.0.0.1:{granted.port}"],
                                                   idle_s=0.5) as egress:
        silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        silent.connect(str(egress.socket_dir / "proxy"))
        silent.settimeout(10)
        started = time.monotonic()
        assert silent.recv(4096).startswith(b"HTTP/1.1 408")
        assert time.monotonic() - started < 5
        tunnel = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        tunnel.connect(str(egress.socket_dir / "proxy"))
        tunnel.settimeout(10)
        tunnel.sendall(_connect(f"127.0.0.1:{granted.port}"))
        assert tunnel.recv(4096).startswith(b"HTTP/1.1 200")
        started = time.monotonic()
        assert tunnel.recv(4096) == b""  # nothing moved either way: cut
        assert time.monotonic() - started < 5
        silent.close()
        tunnel.close()


def test_refusals_are_counted_per_key_and_interval_not_written_one_line_each(tmp_path: Path) -> None:
    now = [1000.0]
    log = DenialLog(tmp_path / "denied.jsonl", interval_s=10, max_keys=2, clock=lambda: now[0])
    for _ in range(5000):
        log.write(Denial(now[0], "CONNECT", "a.example", 443, "not on this Attempt's network allowlist"))
    log.write(Denial(now[0], "CONNECT", "b.example", 443, "not on this Attempt's network allowlist"))
    for host in ("c.example", "d.example", "e.example"):  # past max_keys: one line counts them
        log.write(Denial(now[0], "CONNECT", host, 443, "not on this Attempt's network allowlist"))
    assert not log.path.exists()  # nothing written while the interval lasts
    now[0] += 11
    log.write(Denial(now[0], "CONNECT", "a.example", 443, "not on this Attempt's network allowlist"))
    denials = log.read()
    assert [(d.host, d.count) for d in denials] == [("a.example", 5000), ("b.example", 1), ("*", 3),
                                                     ("a.example", 1)]
    assert len(log.path.read_text().splitlines()) == 4
