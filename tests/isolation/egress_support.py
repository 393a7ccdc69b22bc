"""Local HTTP servers that say which one answered, and a client that speaks to the egress proxy's socket."""

from __future__ import annotations

import socket
from contextlib import AbstractContextManager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from local_servers import serving


class _Named(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802
        self.server.seen.append({k.lower(): v for k, v in self.headers.items()})  # type: ignore[attr-defined]
        body = f"server {self.server.name}".encode()  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass


class NamedServer(ThreadingHTTPServer):
    """Answers every GET with `server NAME`, and keeps the headers of what it was sent."""

    daemon_threads = True

    def __init__(self, name: str, host: str = "127.0.0.1", family: int = socket.AF_INET) -> None:
        self.address_family = family
        super().__init__((host, 0), _Named)
        self.name = name
        self.seen: list[dict[str, str]] = []

    @property
    def port(self) -> int:
        return int(self.server_address[1])


def http_server(name: str, host: str = "127.0.0.1",
                family: int = socket.AF_INET) -> AbstractContextManager[NamedServer]:
    return serving(NamedServer(name, host, family))


def through_proxy(socket_path: Path, request: bytes, then: bytes = b"") -> bytes:
    """Send `request` to the proxy's unix socket; after a 200 to a CONNECT, send `then` through the tunnel.
    Returns everything the proxy and the far end sent back."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.settimeout(10)
        client.connect(str(socket_path))
        client.sendall(request)
        if then:
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = client.recv(4096)
                if not chunk:
                    return head
                head += chunk
            if not head.startswith(b"HTTP/1.1 200"):
                return head
            client.sendall(then)
            reply = head
        else:
            reply = b""
        while chunk := client.recv(65536):
            reply += chunk
        return reply


def get(host_header: str) -> bytes:
    return f"GET / HTTP/1.1\r\nHost: {host_header}\r\nConnection: close\r\n\r\n".encode()
